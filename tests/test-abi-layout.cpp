// Pins the layout of every struct that crosses the ABI. A reordered or resized field fails the build
// (static_assert) on LP64 targets; the C-vs-C++ checks run everywhere.
#include <basalt/basalt.h>
#include <basalt/plugin.h>
#include <basalt/plugin_backend.h>
#include <basalt/plugin_decoder.h>
#include <basalt/plugin_kv_cache.h>
#include <basalt/plugin_sampler.h>
#include <basalt/plugin_steering.h>

#include <catch2/catch.hpp>

extern "C" size_t basalt_test_c_layout(int which);

#define PIN(type, field, off) static_assert(offsetof(type, field) == (off), #type "." #field " moved")
#define PIN_SIZE(type, size) static_assert(sizeof(type) == (size), "sizeof(" #type ") changed")

#if UINTPTR_MAX == 0xffffffffffffffffu
// ABI 1.7, LP64. Appending a field changes only the *_SIZE line of its struct; anything else is a break.
PIN(basalt_params, struct_size, 0);
PIN(basalt_params, count, 8);
PIN(basalt_params, keys, 16);
PIN(basalt_params, values, 24);
PIN_SIZE(basalt_params, 32);

PIN(basalt_token_data, id, 0);
PIN(basalt_token_data, logit, 4);
PIN(basalt_token_data, p, 8);
PIN_SIZE(basalt_token_data, 12);

PIN(basalt_candidates, seq_id, 4);
PIN(basalt_candidates, data, 8);
PIN(basalt_candidates, size, 16);
PIN(basalt_candidates, selected, 24);
PIN(basalt_candidates, sorted, 32);
PIN(basalt_candidates, probs_valid, 36);
PIN_SIZE(basalt_candidates, 40);

PIN(basalt_host, abi_major, 4);
PIN(basalt_host, abi_minor, 8);
PIN(basalt_host, ctx, 16);
PIN(basalt_host, log, 24);
PIN(basalt_host, set_error, 32);
PIN(basalt_host, alloc, 40);
PIN(basalt_host, free, 48);
PIN_SIZE(basalt_host, 56);

PIN(basalt_component_desc, kind, 4);
PIN(basalt_component_desc, name, 8);
PIN(basalt_component_desc, description, 16);
PIN(basalt_component_desc, version_major, 24);
PIN(basalt_component_desc, version_minor, 28);
PIN(basalt_component_desc, version_patch, 32);
PIN(basalt_component_desc, iface, 40);
PIN_SIZE(basalt_component_desc, 48);

// These three offsets are frozen across every major (the host reads them before anything else).
PIN(basalt_plugin_desc, struct_size, 0);
PIN(basalt_plugin_desc, abi_major, 4);
PIN(basalt_plugin_desc, abi_minor, 8);
PIN(basalt_plugin_desc, name, 16);
PIN(basalt_plugin_desc, n_components, 24);
PIN(basalt_plugin_desc, components, 32);
PIN(basalt_plugin_desc, shutdown, 40);
PIN_SIZE(basalt_plugin_desc, 48);

PIN(basalt_sampler_iface, flags, 4);
PIN(basalt_sampler_iface, create, 8);
PIN(basalt_sampler_iface, destroy, 16);
PIN(basalt_sampler_iface, apply, 24);
PIN(basalt_sampler_iface, accept, 32);
PIN(basalt_sampler_iface, reset, 40);
PIN(basalt_sampler_iface, clone, 48);
PIN(basalt_sampler_iface, set_vocab, 56); /* since 1.5 */
PIN(basalt_sampler_iface, rollback, 64);
PIN_SIZE(basalt_sampler_iface, 72);
PIN(basalt_vocab_view, n_tokens, 8); /* since 1.5 */
PIN(basalt_vocab_view, texts, 16);
PIN(basalt_vocab_view, text_lens, 24);
PIN(basalt_vocab_view, token_flags, 32);
PIN(basalt_vocab_view, fingerprint, 40);
PIN_SIZE(basalt_vocab_view, 48);
static_assert(BASALT_SAMPLER_IFACE_MIN_SIZE == 32);

PIN(basalt_tensor, dtype, 4);
PIN(basalt_tensor, n_dims, 8);
PIN(basalt_tensor, ne, 16);
PIN(basalt_tensor, nb, 48);
PIN(basalt_tensor, buffer, 80);
PIN(basalt_tensor, offset, 88);
PIN(basalt_tensor, name, 96);
PIN_SIZE(basalt_tensor, 104);

PIN(basalt_graph_node, op, 4);
PIN(basalt_graph_node, name, 8);
PIN(basalt_graph_node, output, 16);
PIN(basalt_graph_node, n_inputs, 20);
PIN(basalt_graph_node, inputs, 24);
PIN(basalt_graph_node, iparams, 56);
PIN(basalt_graph_node, fparams, 88);
PIN_SIZE(basalt_graph_node, 120);

PIN(basalt_graph, n_tensors, 8);
PIN(basalt_graph, tensors, 16);
PIN(basalt_graph, n_nodes, 24);
PIN(basalt_graph, nodes, 32);
PIN_SIZE(basalt_graph, 40);

PIN(basalt_device_info, type, 4);
PIN(basalt_device_info, name, 8);
PIN(basalt_device_info, memory_total, 16);
PIN(basalt_device_info, memory_free, 24);
PIN(basalt_device_info, max_allocation, 32);
PIN_SIZE(basalt_device_info, 40);

PIN(basalt_backend_iface, device_count, 8);
PIN(basalt_backend_iface, device_info, 16);
PIN(basalt_backend_iface, create, 24);
PIN(basalt_backend_iface, destroy, 32);
PIN(basalt_backend_iface, buffer_alloc, 40);
PIN(basalt_backend_iface, buffer_free, 48);
PIN(basalt_backend_iface, buffer_write, 56);
PIN(basalt_backend_iface, buffer_read, 64);
PIN(basalt_backend_iface, supports_node, 72);
PIN(basalt_backend_iface, graph_compute, 80);
PIN(basalt_backend_iface, buffer_wrap_host, 88);
PIN(basalt_backend_iface, buffer_wrap_file, 96); /* since 1.1 */
PIN_SIZE(basalt_backend_iface, 104);

PIN(basalt_kv_cache_config, n_layers, 4);
PIN(basalt_kv_cache_config, n_slots, 20);
PIN(basalt_kv_cache_config, n_seq_max, 24);
PIN(basalt_kv_cache_config, layer_window, 32);
PIN(basalt_kv_cache_config, n_batch, 40); /* since 1.1 */
PIN_SIZE(basalt_kv_cache_config, 48);
PIN(basalt_kv_cache_layout, k_type, 4);
PIN(basalt_kv_cache_layout, v_type, 8);
PIN(basalt_kv_cache_layout, block_size, 12);
PIN(basalt_kv_cache_layout, n_window_slots, 16); /* since 1.1 */
PIN(basalt_kv_cache_layout, stream_sinks, 20);   /* since 1.4 */
PIN(basalt_kv_cache_layout, stream_window, 24);
PIN(basalt_kv_cache_layout, stream_batch, 28);
PIN(basalt_kv_cache_layout, residual, 32);
PIN_SIZE(basalt_kv_cache_layout, 36);
PIN_SIZE(basalt_kv_copy, 12);
PIN(basalt_kv_reservation, n_tokens, 8);
PIN(basalt_kv_reservation, tokens, 16);
PIN(basalt_kv_reservation, positions, 24);
PIN(basalt_kv_reservation, seq_ids, 32);
PIN(basalt_kv_reservation, out_slots, 40);
PIN(basalt_kv_reservation, out_copies, 48);
PIN(basalt_kv_reservation, copies_capacity, 56);
PIN(basalt_kv_reservation, out_n_copies, 64);
PIN(basalt_kv_reservation, out_window_slots, 72); /* since 1.1 */
PIN(basalt_kv_reservation, out_window_copies, 80);
PIN(basalt_kv_reservation, window_copies_capacity, 88);
PIN(basalt_kv_reservation, out_n_window_copies, 96);
PIN_SIZE(basalt_kv_reservation, 104);
PIN(basalt_kv_cache_iface, create, 8);
PIN(basalt_kv_cache_iface, destroy, 16);
PIN(basalt_kv_cache_iface, layout, 24);
PIN(basalt_kv_cache_iface, reserve, 32);
PIN(basalt_kv_cache_iface, visible, 40);
PIN(basalt_kv_cache_iface, seq_drop, 48);
PIN(basalt_kv_cache_iface, seq_fork, 56);
PIN(basalt_kv_cache_iface, prefix_attach, 64);
PIN(basalt_kv_cache_iface, free_slots, 72);
PIN(basalt_kv_cache_iface, seq_truncate, 80); /* since 1.1 */
PIN(basalt_kv_cache_iface, seq_set_salt, 88); /* since 1.2 */
PIN_SIZE(basalt_kv_cache_iface, 96);

PIN(basalt_batch, n_tokens, 8);
PIN(basalt_batch, tokens, 16);
PIN(basalt_batch, positions, 24);
PIN(basalt_batch, seq_ids, 32);
PIN(basalt_batch, want_logits, 40);
PIN_SIZE(basalt_batch, 48);
PIN(basalt_decoder_host, n_models, 4);
PIN(basalt_decoder_host, ctx, 8);
PIN(basalt_decoder_host, n_vocab, 16);
PIN(basalt_decoder_host, n_ctx, 24);
PIN(basalt_decoder_host, n_seq, 28);
PIN(basalt_decoder_host, sample, 32);
PIN(basalt_decoder_host, distribution, 40);
PIN(basalt_decoder_host, accept, 48);
PIN(basalt_decoder_host, seq_fork, 56);
PIN(basalt_decoder_host, seq_drop, 64);
PIN(basalt_decoder_host, seq_truncate, 72);
PIN(basalt_decoder_host, seq_length, 80);
PIN(basalt_decoder_host, emit, 88);
PIN(basalt_decoder_host, is_end_of_generation, 96);
PIN(basalt_decoder_host, set_stat, 104);
PIN(basalt_decoder_host, rollback, 112);        /* since 1.5 */
PIN(basalt_decoder_host, batch_rows, 120);      /* since 1.6 */
PIN(basalt_decoder_host, model_recurrent, 128); /* since 1.8 */
PIN(basalt_decoder_host, seq_snapshot, 136);
PIN(basalt_decoder_host, seq_restore, 144);
PIN_SIZE(basalt_decoder_host, 152);
PIN(basalt_decoder_feed, seq, 4);
PIN(basalt_decoder_feed, tokens, 8);
PIN(basalt_decoder_feed, n_tokens, 16);
PIN(basalt_decoder_feed, logits, 24);
PIN_SIZE(basalt_decoder_feed, 32);
PIN(basalt_decoder_plan, feeds, 8);
PIN(basalt_decoder_plan, capacity, 16);
PIN(basalt_decoder_plan, n_feeds, 24);
PIN_SIZE(basalt_decoder_plan, 32);
PIN(basalt_decoder_result, n_rows, 8);
PIN_SIZE(basalt_decoder_result, 16);
PIN(basalt_decoder_request, prompt, 8);
PIN(basalt_decoder_request, n_prompt, 16);
PIN(basalt_decoder_request, max_tokens, 24);
PIN(basalt_decoder_request, seed, 32);
PIN(basalt_decoder_request, chain_flags, 40);
PIN_SIZE(basalt_decoder_request, 48);
PIN(basalt_decoder_info, n_seq, 4);
PIN(basalt_decoder_info, n_models, 8);
PIN(basalt_decoder_info, n_outputs, 12);
PIN(basalt_decoder_info, flags, 16);
PIN(basalt_decoder_needs, n_outputs, 12);
PIN(basalt_decoder_needs, n_snapshot_seq, 16); /* since 1.8 */
PIN_SIZE(basalt_decoder_needs, 24);
PIN(basalt_decoder_info, n_snapshot_seq, 24); /* since 1.8 */
PIN_SIZE(basalt_decoder_info, 32);
PIN(basalt_decoder_iface, create, 8);
PIN(basalt_decoder_iface, destroy, 16);
PIN(basalt_decoder_iface, reserved_run, 24);
PIN(basalt_decoder_iface, requirements, 32);
PIN(basalt_decoder_iface, begin, 40);
PIN(basalt_decoder_iface, plan, 48);
PIN(basalt_decoder_iface, consume, 56);
PIN_SIZE(basalt_decoder_iface, 64);
PIN(basalt_engine_params, n_ctx, 8);
PIN(basalt_engine_params, prefill_chunk, 28);
PIN(basalt_engine_params, backend, 40);
PIN(basalt_engine_params, second_model, 72);
PIN(basalt_engine_params, moe_router, 80);          /* since 1.4 */
PIN(basalt_engine_params, max_step_ms, 88);         /* since 1.7 */
PIN(basalt_engine_params, max_step_factor, 96);     /* since 1.7 */
PIN(basalt_engine_params, prefix_state_bytes, 104); /* since 1.9 */
PIN_SIZE(basalt_engine_params, 112);
PIN(basalt_request_params, prompt, 8);
PIN(basalt_request_params, tokens, 24);
PIN(basalt_request_params, samplers, 40);
PIN(basalt_request_params, max_tokens, 56);
PIN(basalt_request_params, seed, 64);
PIN(basalt_request_params, stop, 88);
PIN(basalt_request_params, callback, 104);
PIN(basalt_request_params, user_data, 112);
PIN(basalt_request_params, cache_salt, 120);
PIN(basalt_request_params, steer, 128); /* since 1.3 */
PIN(basalt_request_params, n_steer, 136);
PIN(basalt_request_params, source, 144); /* since 1.4 */
PIN(basalt_request_params, source_tokens, 152);
PIN(basalt_request_params, n_source_tokens, 160);
PIN(basalt_request_params, n_top_logprobs, 168);
PIN(basalt_request_params, pooling, 176);
PIN(basalt_request_params, normalize, 180);
PIN(basalt_request_params, dimensions, 184);
PIN(basalt_request_params, grammar, 192); /* since 1.5 */
PIN(basalt_request_params, grammar_kind, 200);
PIN_SIZE(basalt_request_params, 208);
PIN(basalt_request_stats, prompt_tokens, 8);
PIN(basalt_request_stats, queue_ms, 32);
PIN(basalt_request_stats, tokens_per_s, 88);
PIN(basalt_request_stats, source_tokens, 96); /* since 1.4 */
PIN(basalt_request_stats, encode_ms, 104);
PIN_SIZE(basalt_request_stats, 112);
PIN(basalt_engine_stats, steps, 8);
PIN(basalt_engine_stats, kv_slots_free, 72);
PIN(basalt_engine_stats, cached_tokens, 80);
PIN(basalt_engine_stats, preemptions, 88);       /* since 1.7 */
PIN(basalt_engine_stats, state_checkpoints, 96); /* since 1.9 */
PIN(basalt_engine_stats, state_checkpoint_bytes, 104);
PIN_SIZE(basalt_engine_stats, 112);
PIN(basalt_session_params, backend, 24);
PIN(basalt_session_params, kv_params, 48);
PIN(basalt_session_params, moe_router, 56);             /* since 1.4 */
PIN(basalt_session_params, state_checkpoint_bytes, 64); /* since 1.9 */
PIN_SIZE(basalt_session_params, 72);
PIN(basalt_moe_stats, n_expert, 4); /* since 1.4 */
PIN(basalt_moe_stats, passes, 8);
PIN(basalt_moe_stats, dropped, 32);
PIN(basalt_moe_stats, rerouted, 40);
PIN(basalt_moe_stats, imbalance, 48);
// since 1.4: chat templates
PIN(basalt_chat_render_params, max_depth, 4);
PIN(basalt_chat_render_params, context_json, 8);
PIN(basalt_chat_render_params, model, 16);
PIN(basalt_chat_render_params, bos_token, 24);
PIN(basalt_chat_render_params, eos_token, 32);
PIN(basalt_chat_render_params, now_unix, 40);
PIN(basalt_chat_render_params, max_steps, 48);
PIN(basalt_chat_render_params, max_output_bytes, 56);
PIN(basalt_chat_render_params, max_ms, 64);
PIN(basalt_chat_render_params, reserved0, 68);
PIN_SIZE(basalt_chat_render_params, 72);
PIN_SIZE(basalt_moe_stats, 56);

PIN(basalt_activations, layer, 4);
PIN(basalt_activations, n_tokens, 8);
PIN(basalt_activations, n_embd, 16);
PIN(basalt_activations, data, 24);
PIN(basalt_activations, positions, 32);
PIN(basalt_activations, seq_ids, 40);
PIN_SIZE(basalt_activations, 48);
PIN(basalt_steering_iface, create, 8);
PIN(basalt_steering_iface, destroy, 16);
PIN(basalt_steering_iface, layer_mode, 24);
PIN(basalt_steering_iface, vector, 32);
PIN(basalt_steering_iface, observe, 40);
PIN_SIZE(basalt_steering_iface, 48);

PIN(basalt_runtime_params, flags, 4);
PIN_SIZE(basalt_runtime_params, 8);
PIN(basalt_component_info, kind, 4);
PIN(basalt_component_info, name, 8);
PIN(basalt_component_info, description, 16);
PIN(basalt_component_info, version_major, 24);
PIN(basalt_component_info, plugin_abi_major, 36);
PIN(basalt_component_info, plugin_abi_minor, 40);
PIN(basalt_component_info, plugin_name, 48);
PIN(basalt_component_info, file, 56);
PIN_SIZE(basalt_component_info, 64);
PIN_SIZE(basalt_model_params, 8);
PIN(basalt_model_info, arch, 8);
PIN(basalt_model_info, name, 16);
PIN(basalt_model_info, n_layer, 24);
PIN(basalt_model_info, sliding_window, 68);
PIN(basalt_model_info, n_params, 72);
PIN(basalt_model_info, file_bytes, 88);
PIN(basalt_model_info, n_tensors, 96);
PIN(basalt_model_info, supported, 100);
PIN(basalt_model_info, pooling, 104); /* since 1.4 */
PIN(basalt_model_info, n_cls_out, 108);
PIN(basalt_model_info, rope_scaling, 112);
PIN(basalt_model_info, n_layer_recurrent, 120); /* since 1.8 */
PIN_SIZE(basalt_model_info, 128);
PIN(basalt_model_tensor, type, 4);
PIN(basalt_model_tensor, name, 8);
PIN(basalt_model_tensor, n_dims, 16);
PIN(basalt_model_tensor, ne, 24);
PIN(basalt_model_tensor, n_bytes, 56);
PIN(basalt_model_tensor, offset, 64);
PIN_SIZE(basalt_model_tensor, 72);
PIN(basalt_plan_params, n_ctx, 4);
PIN(basalt_plan_params, n_batch, 8);
PIN(basalt_plan_params, k_type, 12);
PIN(basalt_plan_params, v_type, 16);
PIN(basalt_plan_params, n_seq_max, 20);   /* since 1.1 */
PIN(basalt_plan_params, kv_residual, 24); /* since 1.4 */
PIN_SIZE(basalt_plan_params, 32);
PIN(basalt_memory_plan, n_ctx, 4);
PIN(basalt_memory_plan, k_type, 12);
PIN(basalt_memory_plan, weight_bytes, 24);
PIN(basalt_memory_plan, kv_bytes_per_token, 32);
PIN(basalt_memory_plan, kv_bytes, 40);
PIN(basalt_memory_plan, scratch_bytes, 48);
PIN(basalt_memory_plan, total_bytes, 56);
PIN(basalt_memory_plan, n_seq_max, 64); /* since 1.1 */
PIN(basalt_memory_plan, kv_cells_full, 72);
PIN(basalt_memory_plan, kv_cells_window, 80);
PIN(basalt_memory_plan, logits_bytes, 88);
PIN(basalt_memory_plan, host_bytes, 96);              /* since 1.7 */
PIN(basalt_memory_plan, state_checkpoint_bytes, 104); /* since 1.9 */
PIN_SIZE(basalt_memory_plan, 112);
#endif

TEST_CASE("ABI structs have the same layout in C and C++", "[abi]") {
    CHECK(basalt_test_c_layout(0) == sizeof(basalt_host));
    CHECK(basalt_test_c_layout(1) == sizeof(basalt_component_desc));
    CHECK(basalt_test_c_layout(2) == sizeof(basalt_plugin_desc));
    CHECK(basalt_test_c_layout(3) == sizeof(basalt_sampler_iface));
    CHECK(basalt_test_c_layout(4) == sizeof(basalt_candidates));
    CHECK(basalt_test_c_layout(5) == sizeof(basalt_params));
    CHECK(basalt_test_c_layout(6) == sizeof(basalt_backend_iface));
    CHECK(basalt_test_c_layout(7) == sizeof(basalt_graph_node));
    CHECK(basalt_test_c_layout(8) == sizeof(basalt_tensor));
    CHECK(basalt_test_c_layout(9) == sizeof(basalt_kv_cache_iface));
    CHECK(basalt_test_c_layout(10) == sizeof(basalt_decoder_iface));
    CHECK(basalt_test_c_layout(11) == sizeof(basalt_decoder_host));
    CHECK(basalt_test_c_layout(12) == sizeof(basalt_steering_iface));
    CHECK(basalt_test_c_layout(13) == sizeof(basalt_component_info));
    CHECK(basalt_test_c_layout(14) == offsetof(basalt_plugin_desc, components));
    CHECK(basalt_test_c_layout(15) == offsetof(basalt_sampler_iface, clone));
    CHECK(basalt_test_c_layout(16) == sizeof(basalt_batch));
    CHECK(basalt_test_c_layout(17) == sizeof(basalt_kv_reservation));
}

TEST_CASE("the library reports the ABI version it was built with", "[abi]") {
    uint32_t major = 99, minor = 99;
    basalt_abi_version(&major, &minor);
    CHECK(major == BASALT_ABI_VERSION_MAJOR);
    CHECK(minor == BASALT_ABI_VERSION_MINOR);
    CHECK(std::string(basalt_version_string()).find('.') != std::string::npos);
}

TEST_CASE("BASALT_HAS_FIELD respects struct_size", "[abi]") {
    basalt_sampler_iface t{};
    t.struct_size = static_cast<uint32_t>(BASALT_SAMPLER_IFACE_MIN_SIZE);
    CHECK(BASALT_HAS_FIELD(&t, basalt_sampler_iface, apply));
    CHECK_FALSE(BASALT_HAS_FIELD(&t, basalt_sampler_iface, accept));
    t.struct_size = sizeof(t);
    CHECK(BASALT_HAS_FIELD(&t, basalt_sampler_iface, clone));
    const basalt_sampler_iface* null_table = nullptr;
    CHECK_FALSE(BASALT_HAS_FIELD(null_table, basalt_sampler_iface, create));
}

TEST_CASE("status and kind names round-trip", "[abi]") {
    CHECK(std::string(basalt_status_name(BASALT_ERR_ABI_MISMATCH)) == "BASALT_ERR_ABI_MISMATCH");
    CHECK(std::string(basalt_status_name(12345)) == "BASALT_ERR_UNKNOWN");
    for (basalt_component_kind k = BASALT_COMPONENT_BACKEND; k <= BASALT_COMPONENT_STEERING; ++k) {
        CHECK(basalt_component_kind_from_name(basalt_component_kind_name(k)) == k);
    }
    CHECK(basalt_component_kind_from_name("gizmo") == 0);
}
