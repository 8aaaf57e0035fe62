// The one list of step inputs: a new per-step input or output is a file under inputs/ and one line here. The order
// is the order of the regions in the IO buffer (inputs first, then outputs) and of their tensors in the graph.
#include "exec/step-input-list.hpp"

namespace basalt {

std::unique_ptr<StepInput> make_tokens_input();              // inputs/tokens.cpp
std::unique_ptr<StepInput> make_positions_input();           // inputs/positions.cpp
std::unique_ptr<StepInput> make_attn_temp_input();           // inputs/attention-temperature.cpp
std::unique_ptr<StepInput> make_kv_slots_input();            // inputs/kv-slots.cpp
std::unique_ptr<StepInput> make_attention_query_input();     // inputs/attention-query.cpp
std::unique_ptr<StepInput> make_visible_lists_input();       // inputs/visible-lists.cpp
std::unique_ptr<StepInput> make_source_lists_input();        // inputs/source-lists.cpp
std::unique_ptr<StepInput> make_window_slots_input();        // inputs/kv-slots.cpp
std::unique_ptr<StepInput> make_window_lists_input();        // inputs/visible-lists.cpp
std::unique_ptr<StepInput> make_steer_rows_input();          // inputs/steer-rows.cpp
std::unique_ptr<StepInput> make_cross_slots_input();         // inputs/cross-slots.cpp
std::unique_ptr<StepInput> make_position_buckets_input();    // inputs/position-buckets.cpp
std::unique_ptr<StepInput> make_cross_lists_input();         // inputs/cross-lists.cpp
std::unique_ptr<StepInput> make_output_rows_input();         // inputs/output-rows.cpp
std::unique_ptr<StepInput> make_residual_rows_input();       // inputs/residual-rows.cpp
std::unique_ptr<StepInput> make_residual_table_input();      // inputs/residual-table.cpp
std::unique_ptr<StepInput> make_state_rows_input();          // inputs/state-rows.cpp
std::unique_ptr<StepInput> make_logits_readback();           // inputs/logits-readback.cpp
std::unique_ptr<StepInput> make_observed_layers_readback();  // inputs/observed-layers.cpp
std::unique_ptr<StepInput> make_moe_record_readback();       // inputs/moe-record.cpp
std::unique_ptr<StepInput> make_pool_rows_input();           // inputs/pool-rows.cpp
std::unique_ptr<StepInput> make_embeddings_readback();       // inputs/embeddings-readback.cpp
std::unique_ptr<StepInput> make_rank_scores_readback();      // inputs/rank-scores.cpp

std::vector<std::unique_ptr<StepInput>> make_step_inputs() {
    std::vector<std::unique_ptr<StepInput>> inputs;
    // One entry per line, so that adding an input is a one-line change.
    // clang-format off
    for (auto* make : {
             make_tokens_input,
             make_positions_input,
             make_attn_temp_input,
             make_kv_slots_input,
             make_attention_query_input,
             make_visible_lists_input,
             make_source_lists_input,
             make_window_slots_input,
             make_window_lists_input,
             make_steer_rows_input,
             make_cross_slots_input,
             make_position_buckets_input,
             make_cross_lists_input,
             make_output_rows_input,
             make_residual_rows_input,
             make_residual_table_input,
             make_state_rows_input,
             make_logits_readback,
             make_observed_layers_readback,
             make_moe_record_readback,
             make_pool_rows_input,
             make_embeddings_readback,
             make_rank_scores_readback,
         }) {
        inputs.push_back(make());
    }
    // clang-format on
    return inputs;
}

}  // namespace basalt
