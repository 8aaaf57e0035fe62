// POST /v1/rerank (llama-server's and Jina's shape; docs/embeddings.md): `query`, `documents` (strings), `top_n`,
// `return_documents`. Each document is paired with the query as BERT cross-encoders read them ([CLS] query [SEP]
// document [SEP]: the query tokenized with the vocabulary's special tokens, then the document's, without its
// leading BOS/[CLS]) and scored by the model's rank head; the results come sorted by relevance_score, best first.
// A model without a rank head answers 400 naming why.
#include <algorithm>

#include "embed-exchange.hpp"
#include "json-limits.hpp"

namespace basalt::serve {
namespace {

std::vector<int32_t> tokenize(const basalt_model* model, const std::string& text) {
    size_t n = 0;
    std::vector<int32_t> ids(text.size() + 8);
    basalt_status st =
        basalt_tokenize(model, text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n);
    if (st == BASALT_ERR_CAPACITY) {
        ids.resize(n);
        st = basalt_tokenize(model, text.data(), text.size(), BASALT_TOKENIZE_ADD_SPECIAL, ids.data(), ids.size(), &n);
    }
    if (st != BASALT_OK) throw ApiError(400, std::string("tokenizing: ") + basalt_last_error(), "documents");
    ids.resize(n);
    return ids;
}

}  // namespace

void start_rerank(Server& server, const std::shared_ptr<HttpSession>& s, const std::string& endpoint,
                  const std::string& body_text) {
    std::vector<EmbedInput> pairs;
    std::vector<std::string> documents;
    size_t top_n = 0;
    bool return_documents = false;
    try {
        basalt_model_info info{};
        info.struct_size = sizeof(info);
        if (basalt_model_describe(server.model(), &info) != BASALT_OK || info.n_cls_out == 0)
            throw ApiError(400, "this model cannot rerank: it has no rank head (cls.output.weight or cls.weight)");
        const json body = parse_body(body_text);
        for (const auto& [key, value] : body.items()) {
            if (key != "model" && key != "query" && key != "documents" && key != "top_n" && key != "return_documents")
                throw ApiError(400,
                               "unknown field '" + cli::excerpt(key) +
                                   "' (/v1/rerank takes model, query, documents, top_n, return_documents)",
                               key);
        }
        if (body.contains("model") && (!body["model"].is_string() || body["model"] != server.served().id))
            throw ApiError(404, "this server serves '" + server.served().id + "'", "model", "invalid_request_error",
                           "model_not_found");
        if (!body.contains("query") || !body["query"].is_string() || body["query"].get<std::string>().empty())
            throw ApiError(400, "'query' must be a non-empty string", "query");
        if (!body.contains("documents") || !body["documents"].is_array() || body["documents"].empty())
            throw ApiError(400, "'documents' must be a non-empty array of strings", "documents");
        for (const json& d : body["documents"]) {
            if (!d.is_string()) throw ApiError(400, "'documents' must hold strings", "documents");
            documents.push_back(d.get<std::string>());
        }
        top_n = documents.size();
        if (body.contains("top_n")) {
            const json& t = body["top_n"];
            if (!t.is_number_integer() || t.get<int64_t>() < 1)
                throw ApiError(400, "'top_n' must be a positive integer", "top_n");
            top_n = std::min<size_t>(top_n, static_cast<size_t>(t.get<int64_t>()));
        }
        if (body.contains("return_documents")) {
            if (!body["return_documents"].is_boolean())
                throw ApiError(400, "'return_documents' must be true or false", "return_documents");
            return_documents = body["return_documents"].get<bool>();
        }
        const std::vector<int32_t> query = tokenize(server.model(), body["query"].get<std::string>());
        for (const std::string& d : documents) {
            std::vector<int32_t> doc = tokenize(server.model(), d);
            EmbedInput in;
            in.is_tokens = true;
            in.tokens = query;
            // The document's own BOS ([CLS]) would open a second sequence: the pair has one.
            const size_t skip = !doc.empty() && !query.empty() && doc[0] == query[0] ? 1 : 0;
            in.tokens.insert(in.tokens.end(), doc.begin() + static_cast<std::ptrdiff_t>(skip), doc.end());
            pairs.push_back(std::move(in));
        }
    } catch (const ApiError& e) {
        return server.send_error(s, endpoint, e);
    }
    const std::string id = server.served().id;
    submit_embeddings(server, s, endpoint, std::move(pairs), BASALT_POOLING_RANK, 0,
                      [id, top_n, return_documents, documents = std::move(documents)](
                          std::vector<std::vector<float>>& scores, uint64_t tokens) {
                          std::vector<size_t> order(scores.size());
                          for (size_t i = 0; i < order.size(); ++i) order[i] = i;
                          std::stable_sort(order.begin(), order.end(),
                                           [&](size_t a, size_t b) { return scores[a][0] > scores[b][0]; });
                          json results = json::array();
                          for (size_t k = 0; k < top_n; ++k) {
                              json r = {{"index", order[k]}, {"relevance_score", scores[order[k]][0]}};
                              if (return_documents) r["document"] = {{"text", documents[order[k]]}};
                              results.push_back(std::move(r));
                          }
                          return json{{"model", id},
                                      {"object", "list"},
                                      {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}},
                                      {"results", std::move(results)}};
                      });
}

}  // namespace basalt::serve
