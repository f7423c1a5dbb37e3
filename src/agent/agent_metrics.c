// SPDX-License-Identifier: Apache-2.0
/* Agent self-metrics (Prometheus families from the pipeline, labels, windows, exporter). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agent_metrics.h"
#include "agent/agent_state.h"
#include "agent/httpd.h"
#include "agent/metrics.h"
#include "capture/sampler.h"
#include "export/exporter.h"
#include "unwind/unwind.h"

enum {
	M_UP,
	M_SAMPLES,
	M_PROFILED,
	M_DROPS,
	M_BPF,
	M_UNWIND,
	M_FRAMES,
	M_FRAMES_UNSYM,
	M_SYM_BYTES,
	M_SYM_TABLES,
	M_SYM_EVICT,
	M_SYM_BUILDS,
	M_SYM_REBUILDS,
	M_SYM_BUILD_CPU,
	M_SYM_BUILDING,
	M_SYM_WAIT,
	M_SYM_DEMANGLE_BYTES,
	M_UNWIND_SCAN,
	M_PROCS,
	M_PROC_EVICT,
	M_PROC_BYTES,
	M_PROC_MAPS_CUT,
	M_ELF,
	M_LCACHE,
	M_LCACHE_EVICT,
	M_OVERFLOW,
	M_BUILT,
	M_PUSHED,
	M_FAILED,
	M_RETRIES,
	M_REJECTED,
	M_SPOOLED,
	M_DROPPED,
	M_LAT,
	M_LAT_LAST,
	M_SPOOL_BYTES,
	M_SPOOL_FILES,
	M_QUEUE_BYTES,
	M_WINDOWS,
	M_CUDA_UNPLACED,
	M_CPU,
	M_RELOADS,
	M_K8S_FETCH,
	M_K8S_ERR,
	M_ENCODE_ERR,
	M_TRIMMED,
	M_PY_PROCS,
	M_PY_UNSUPPORTED,
	M_PY_SAMPLES,
	M_PY_FRAMES,
	M_PY_MERGE,
	M_PY_CODE_BYTES,
	M_PY_CODE_EVICT,
	M_PY_LINES_BUDGET,
	M_MEM_INUSE,
	M_GPU_INUSE,
	M_TENSOR_INUSE,
	M_HEAP_INUSE,
	M_BACKWARD,
	M_CUDA_LIBS,
	M_CUDA_HOLDS,
	M_CUDA_HOLD_MAX,
	M_UNWIND_FP,
	M_UNWIND_FP_FAIL,
	M_MEM_WATCHED,
	M_STEP_PROBED,
	M_STEPS,
	M_STEP_SECONDS,
	M_STEP_P50,
	M_STEP_P99,
	M_STEP_DATA_RATIO,
	M_STEP_FULL,
	M__COUNT
};

static const struct {
	const char *name;
	enum metric_type type;
	const char *help;
} metric_defs[M__COUNT] = {
	[M_UP] = {"mlprof_up", METRIC_GAUGE, "1 while the agent runs"},
	[M_SAMPLES] = {"mlprof_samples_total", METRIC_COUNTER,
		       "Samples unwound and symbolized by the pipeline"},
	[M_PROFILED] = {"mlprof_samples_profiled_total", METRIC_COUNTER,
			"Samples added to a profile"},
	[M_DROPS] = {"mlprof_samples_dropped_total", METRIC_COUNTER, "Samples dropped, by reason"},
	[M_BPF] = {"mlprof_bpf_events_total", METRIC_COUNTER,
		   "BPF-side counters of the sampler, by event"},
	[M_UNWIND] = {"mlprof_unwind_total", METRIC_COUNTER,
		      "Stack unwinds by how they ended (anything but complete is a failure)"},
	[M_UNWIND_FP] =
		{"mlprof_unwind_fp_frames_total", METRIC_COUNTER,
		 "Frames of code without unwind info (Go, no CFI) recovered by frame pointer"},
	[M_UNWIND_FP_FAIL] = {"mlprof_unwind_fp_failures_total", METRIC_COUNTER,
			      "Frame-pointer walks that stopped before the outermost frame, by "
			      "reason"},
	[M_FRAMES] = {"mlprof_frames_total", METRIC_COUNTER, "Native frames symbolized"},
	[M_FRAMES_UNSYM] = {"mlprof_frames_unsymbolized_total", METRIC_COUNTER,
			    "Native frames without a symbol"},
	[M_SYM_BYTES] = {"mlprof_symcache_bytes", METRIC_GAUGE,
			 "Bytes held by symbol indexes (12 bytes a function; names stay in the "
			 "files)"},
	[M_SYM_TABLES] = {"mlprof_symcache_tables", METRIC_GAUGE, "Symbol indexes held"},
	[M_SYM_EVICT] = {"mlprof_symcache_evictions_total", METRIC_COUNTER,
			 "Symbol indexes evicted by the memory bound"},
	[M_SYM_BUILDS] =
		{"mlprof_symcache_builds_total", METRIC_COUNTER,
		 "Symbol indexes built (one per file, shared by every process mapping it)"},
	[M_SYM_REBUILDS] =
		{"mlprof_symcache_rebuilds_total", METRIC_COUNTER,
		 "Symbol indexes built again after their eviction (the bound is too small "
		 "for the working set: raise --symcache-bytes)"},
	[M_SYM_BUILD_CPU] = {"mlprof_symcache_build_cpu_seconds_total", METRIC_COUNTER,
			     "CPU time of the symbol index builder thread"},
	[M_SYM_BUILDING] = {"mlprof_symcache_building", METRIC_GAUGE,
			    "Symbol index builds queued or in progress"},
	[M_SYM_WAIT] = {"mlprof_symbol_wait_samples_total", METRIC_COUNTER,
			"Samples that waited for a symbol index being built, by outcome (named "
			"once it was ready, or sent with raw addresses: age, bound, exit)"},
	[M_SYM_DEMANGLE_BYTES] = {"mlprof_symcache_demangled_bytes", METRIC_GAUGE,
				  "Bytes held by demangled names"},
	[M_UNWIND_SCAN] = {"mlprof_unwind_scan_frames_total", METRIC_COUNTER,
			   "Callers of frames with neither CFI nor frame pointer (hand-written "
			   "assembly: MKL) found by a return address on the stack"},
	[M_PROCS] = {"mlprof_procs_cached", METRIC_GAUGE, "Processes in the process cache"},
	[M_PROC_EVICT] = {"mlprof_proc_evictions_total", METRIC_COUNTER,
			  "Processes evicted from the process cache"},
	[M_PROC_BYTES] = {"mlprof_proc_cache_bytes", METRIC_GAUGE,
			  "Bytes of process maps held by the process cache (bounded: 32 MiB, "
			  "least recently used processes evicted past it)"},
	[M_PROC_MAPS_CUT] = {"mlprof_proc_maps_truncated_total", METRIC_COUNTER,
			     "Reads of a process's maps cut by the per-process bounds (65536 "
			     "executable mappings, 2 MiB of distinct paths, 512 MiB read)"},
	[M_ELF] = {"mlprof_elf_files", METRIC_GAUGE, "Open ELF files"},
	[M_PY_PROCS] = {"mlprof_python_processes_total", METRIC_COUNTER,
			"Processes recognized as CPython, by version"},
	[M_PY_UNSUPPORTED] = {"mlprof_python_processes_unsupported_total", METRIC_COUNTER,
			      "Python processes whose interpreter is not supported (native frames "
			      "only)"},
	[M_PY_SAMPLES] = {"mlprof_python_samples_total", METRIC_COUNTER,
			  "Samples that carried Python frames"},
	[M_PY_FRAMES] = {"mlprof_python_frames_total", METRIC_COUNTER,
			 "Python frames, by result (named, or unreadable code object)"},
	[M_PY_MERGE] = {"mlprof_python_merges_total", METRIC_COUNTER,
			"Samples whose Python activations matched their native eval frames "
			"(exact) or not (mismatch)"},
	[M_PY_CODE_BYTES] = {"mlprof_python_code_cache_bytes", METRIC_GAUGE,
			     "Bytes held by decoded Python code objects"},
	[M_MEM_INUSE] = {"mlprof_memory_inuse_bytes", METRIC_GAUGE,
			 "Memory brought in by page faults and still in use at the end of the last "
			 "window, by service (sampled estimate; alert on steady growth)"},
	[M_STEP_PROBED] =
		{"mlprof_training_step_probe_ratio", METRIC_GAUGE,
		 "Fraction of time slots in which the training-step probes are attached "
		 "(1: always; under 1 when the busiest process sends more record_function "
		 "scope events a second than steps-max-scopes: steps are timed in those slots)"},
	[M_MEM_WATCHED] = {"mlprof_memory_fault_watch_ratio", METRIC_GAUGE,
			   "Fraction of the time the memory-growth page-fault programs are "
			   "attached (1; less above --memory-max-faults, captures then weighted)"},
	[M_GPU_INUSE] = {"mlprof_gpu_memory_inuse_bytes", METRIC_GAUGE,
			 "GPU memory allocated and not freed at the end of the last window, by "
			 "service"},
	[M_TENSOR_INUSE] =
		{"mlprof_gpu_tensor_inuse_bytes", METRIC_GAUGE,
		 "GPU memory of PyTorch tensors (its CUDA caching allocator) allocated and "
		 "not freed at the end of the last window, by service (sampled estimate)"},
	[M_BACKWARD] = {"mlprof_torch_backward_total", METRIC_COUNTER,
			"PyTorch backward passes whose autograd worker threads' samples were shown "
			"under the caller of backward() (what=passes), those samples "
			"(what=samples), and passes forgotten before their end because more "
			"processes were in one at once than tracked (what=evicted)"},
	[M_HEAP_INUSE] =
		{"mlprof_heap_inuse_bytes", METRIC_GAUGE,
		 "Heap memory (malloc & co) allocated and not freed at the end of the last "
		 "window, by service (sampled estimate; --heap)"},
	[M_CUDA_LIBS] = {"mlprof_cuda_libraries_probed", METRIC_GAUGE,
			 "CUDA/NCCL library files with uprobes attached"},
	[M_CUDA_HOLDS] = {"mlprof_cuda_holds_total", METRIC_COUNTER,
			  "Processes stopped at a CUDA/NCCL library mmap and continued once its "
			  "probes were attached (outcome=attached), after the 2 s deadline "
			  "(outcome=overdue) or when mlprof stopped (outcome=exit)"},
	[M_CUDA_HOLD_MAX] = {"mlprof_cuda_hold_max_seconds", METRIC_GAUGE,
			     "Longest stop of a process at a CUDA/NCCL library mmap"},
	[M_PY_CODE_EVICT] = {"mlprof_python_code_cache_evictions_total", METRIC_COUNTER,
			     "Python code objects evicted by the memory bound"},
	[M_PY_LINES_BUDGET] =
		{"mlprof_python_lines_unread_total", METRIC_COUNTER,
		 "Python frames shown at their function's first line: line table over "
		 "1 MiB (reason=too_large) or the per-sample line-table read budget "
		 "spent (reason=budget)"},
	[M_LCACHE] = {"mlprof_label_cache_entries", METRIC_GAUGE, "Processes in the label cache"},
	[M_LCACHE_EVICT] = {"mlprof_label_cache_evictions_total", METRIC_COUNTER,
			    "Label cache LRU evictions"},
	[M_OVERFLOW] = {"mlprof_series_overflow_total", METRIC_COUNTER,
			"Samples merged into service_name=other past --max-services"},
	[M_BUILT] = {"mlprof_profiles_built_total", METRIC_COUNTER,
		     "Profiles handed to the exporter"},
	[M_PUSHED] = {"mlprof_profiles_pushed_total", METRIC_COUNTER,
		      "Profiles delivered (pushed or written)"},
	[M_FAILED] = {"mlprof_profiles_failed_total", METRIC_COUNTER,
		      "Delivery attempts that failed"},
	[M_RETRIES] = {"mlprof_push_retries_total", METRIC_COUNTER, "Push retries"},
	[M_REJECTED] = {"mlprof_profiles_rejected_total", METRIC_COUNTER,
			"Profiles rejected by the server (4xx)"},
	[M_SPOOLED] = {"mlprof_profiles_spooled_total", METRIC_COUNTER,
		       "Profiles written to the disk spool"},
	[M_DROPPED] = {"mlprof_profiles_dropped_total", METRIC_COUNTER,
		       "Profiles dropped by queue or spool bounds"},
	[M_LAT] = {"mlprof_push_latency_seconds", METRIC_SUMMARY, "Push request latency"},
	[M_LAT_LAST] = {"mlprof_push_last_latency_seconds", METRIC_GAUGE,
			"Latency of the last push"},
	[M_SPOOL_BYTES] = {"mlprof_spool_bytes", METRIC_GAUGE, "Bytes in the disk spool"},
	[M_SPOOL_FILES] = {"mlprof_spool_files", METRIC_GAUGE, "Files in the disk spool"},
	[M_QUEUE_BYTES] = {"mlprof_queue_bytes", METRIC_GAUGE,
			   "Bytes in the in-memory export queue"},
	[M_CUDA_UNPLACED] = {"mlprof_cuda_uncalibrated_calls_total", METRIC_COUNTER,
			     "CUDA launches, graph launches and NCCL calls counted in a window "
			     "in which no stack of their process was captured (not in its "
			     "profiles)"},
	[M_WINDOWS] = {"mlprof_windows_total", METRIC_COUNTER,
		       "Upload windows closed (including empty ones)"},
	[M_CPU] = {"mlprof_processing_cpu_seconds_total", METRIC_COUNTER,
		   "CPU time spent unwinding and symbolizing"},
	[M_RELOADS] = {"mlprof_config_reloads_total", METRIC_COUNTER,
		       "SIGHUP configuration reloads, by result"},
	[M_K8S_FETCH] = {"mlprof_k8s_pod_list_fetches_total", METRIC_COUNTER, "Pod list requests"},
	[M_K8S_ERR] = {"mlprof_k8s_pod_list_errors_total", METRIC_COUNTER,
		       "Pod list requests that failed"},
	[M_ENCODE_ERR] = {"mlprof_profile_errors_total", METRIC_COUNTER,
			  "Profiles that could not be encoded or handed over"},
	[M_TRIMMED] = {"mlprof_labels_trimmed_total", METRIC_COUNTER,
		       "Label sets cut to Pyroscope's 30-label limit"},
	[M_STEPS] = {"mlprof_training_steps_total", METRIC_COUNTER,
		     "PyTorch training steps (optimizer step to optimizer step), by service"},
	[M_STEP_SECONDS] = {"mlprof_training_step_seconds", METRIC_SUMMARY,
			    "Wall time of PyTorch training steps, by service (sum and count: "
			    "the mean step time)"},
	[M_STEP_P50] = {"mlprof_training_step_p50_seconds", METRIC_GAUGE,
			"Median training step time of the last upload window with steps, by "
			"service"},
	[M_STEP_P99] = {"mlprof_training_step_p99_seconds", METRIC_GAUGE,
			"99th percentile training step time of the last upload window with "
			"steps, by service"},
	[M_STEP_DATA_RATIO] = {"mlprof_training_data_wait_ratio", METRIC_GAUGE,
			       "Share of the step time spent waiting for the DataLoader in the "
			       "last upload window with steps, by service (over 0.05 moderate, "
			       "over 0.2 high: the input pipeline is the bottleneck)"},
	[M_STEP_FULL] = {"mlprof_training_step_services_overflow_total", METRIC_COUNTER,
			 "Processes' training steps of a window not counted: more than 64 "
			 "services with steps"},
};

_Static_assert(M__COUNT <= sizeof(((struct agent *)0)->metric_ids) / sizeof(int),
	       "struct agent's metric_ids is too small");

static void collect(struct metrics *m, void *ctx)
{
	struct agent *a = ctx;
	struct exporter_stats es = {0};
	struct pipeline_stats ps;
	struct labeler_stats ls;
	struct agent_counters c;
	struct agent_inuse inuse[AGENT_MAX_INUSE];
	struct agent_steps steps[AGENT_MAX_STEP_SERVICES];
	int *id = a->metric_ids, n_inuse, n_steps;
	bool have;

	pthread_mutex_lock(&a->snap_lock);
	ps = a->pst;
	ls = a->lst;
	c = a->csnap;
	have = a->have_pst;
	n_inuse = a->n_inuse_snap;
	memcpy(inuse, a->inuse_snap, (size_t)n_inuse * sizeof(inuse[0]));
	n_steps = a->n_steps_snap;
	memcpy(steps, a->steps_snap, (size_t)n_steps * sizeof(steps[0]));
	pthread_mutex_unlock(&a->snap_lock);
	metrics__set(m, id[M_STEP_FULL], NULL, NULL, (double)c.step_services_full, 0);
	for (int i = 0; i < n_steps; i++) {
		const char *svc = steps[i].service;

		metrics__set(m, id[M_STEPS], "service_name", svc, (double)steps[i].steps, 0);
		metrics__set(m, id[M_STEP_SECONDS], "service_name", svc,
			     (double)steps[i].wall_ns / 1e9, steps[i].steps);
		metrics__set(m, id[M_STEP_P50], "service_name", svc, (double)steps[i].p50_ns / 1e9,
			     0);
		metrics__set(m, id[M_STEP_P99], "service_name", svc, (double)steps[i].p99_ns / 1e9,
			     0);
		metrics__set(m, id[M_STEP_DATA_RATIO], "service_name", svc,
			     steps[i].data_wait_ratio, 0);
	}
	for (int i = 0; i < n_inuse; i++)
		metrics__set(m,
			     id[inuse[i].kind == MLPROF_SK_MEMORY	 ? M_MEM_INUSE
				: inuse[i].kind == MLPROF_SK_HEAP	 ? M_HEAP_INUSE
				: inuse[i].kind == MLPROF_SK_CUDA_TENSOR ? M_TENSOR_INUSE
									 : M_GPU_INUSE],
			     "service_name", inuse[i].service, (double)inuse[i].bytes, 0);
	metrics__set(m, id[M_CUDA_LIBS], NULL, NULL, (double)ps.cuda.libs_attached, 0);
	metrics__set(m, id[M_CUDA_HOLDS], "outcome", "attached", (double)ps.hold.held, 0);
	metrics__set(m, id[M_CUDA_HOLDS], "outcome", "overdue", (double)ps.hold.overdue, 0);
	metrics__set(m, id[M_CUDA_HOLDS], "outcome", "exit", (double)ps.hold.at_exit, 0);
	metrics__set(m, id[M_CUDA_HOLD_MAX], NULL, NULL, (double)ps.hold.max_ns / 1e9, 0);
	metrics__set(m, id[M_BACKWARD], "what", "passes", (double)ps.backward.passes, 0);
	metrics__set(m, id[M_BACKWARD], "what", "samples", (double)ps.backward.grafted, 0);
	metrics__set(m, id[M_BACKWARD], "what", "evicted", (double)ps.backward.evicted, 0);
	metrics__set(m, id[M_MEM_WATCHED], NULL, NULL, ps.mem_duty.duty, 0);
	if (have)
		metrics__set(m, id[M_STEP_PROBED], NULL, NULL, ps.steps_duty.duty, 0);
	if (a->exp)
		exporter__stats(a->exp, &es);

	metrics__set(m, id[M_UP], NULL, NULL, 1, 0);
	metrics__set(m, id[M_SAMPLES], NULL, NULL, (double)ps.samples, 0);
	metrics__set(m, id[M_PROFILED], NULL, NULL, (double)c.profiled, 0);
	for (int i = 0; i < DROP__COUNT; i++)
		metrics__set(m, id[M_DROPS], "reason", agent_drop_names[i], (double)c.drops[i], 0);
	metrics__set(m, id[M_DROPS], "reason", "ring_buffer_full",
		     (double)ps.bpf[MLPROF_STAT_RB_FULL], 0);
	if (have) {
		for (int i = 0; i < MLPROF_STAT__COUNT; i++)
			metrics__set(m, id[M_BPF], "event",
				     sampler__stat_name((enum mlprof_bpf_stat)i), (double)ps.bpf[i],
				     0);
		for (int i = 0; i < 6; i++)
			metrics__set(m, id[M_UNWIND], "end", unwind_end__str((enum unwind_end)i),
				     (double)ps.unwind_ends[i], 0);
		metrics__set(m, id[M_UNWIND_FP], NULL, NULL, (double)ps.unwind.fp_frames, 0);
		metrics__set(m, id[M_UNWIND_SCAN], NULL, NULL, (double)ps.unwind.scan_frames, 0);
		for (int i = 0; i < UNWIND_FP_FAIL__COUNT; i++)
			metrics__set(m, id[M_UNWIND_FP_FAIL], "reason",
				     unwind_fp_fail__str((enum unwind_fp_fail)i),
				     (double)ps.unwind.fp_failed[i], 0);
	}
	metrics__set(m, id[M_FRAMES], NULL, NULL, (double)ps.frames_total, 0);
	metrics__set(m, id[M_FRAMES_UNSYM], NULL, NULL, (double)ps.frames_unsymbolized, 0);
	metrics__set(m, id[M_SYM_BYTES], NULL, NULL, (double)ps.sym.bytes, 0);
	metrics__set(m, id[M_SYM_TABLES], NULL, NULL, (double)ps.sym.tables, 0);
	metrics__set(m, id[M_SYM_EVICT], NULL, NULL, (double)ps.sym.evictions, 0);
	metrics__set(m, id[M_SYM_BUILDS], NULL, NULL, (double)ps.sym.builds, 0);
	metrics__set(m, id[M_SYM_REBUILDS], NULL, NULL, (double)ps.sym.rebuilds, 0);
	metrics__set(m, id[M_SYM_BUILD_CPU], NULL, NULL, (double)ps.sym.build_cpu_ns / 1e9, 0);
	metrics__set(m, id[M_SYM_BUILDING], NULL, NULL, (double)ps.sym.building, 0);
	metrics__set(m, id[M_SYM_WAIT], "outcome", "named",
		     (double)(ps.symwait_parked - ps.symwait_forced - ps.symwait_now), 0);
	metrics__set(m, id[M_SYM_WAIT], "outcome", "raw_addresses", (double)ps.symwait_forced, 0);
	metrics__set(m, id[M_SYM_DEMANGLE_BYTES], NULL, NULL, (double)ps.sym.demangle_bytes, 0);
	metrics__set(m, id[M_PROCS], NULL, NULL, (double)ps.procs_cached, 0);
	metrics__set(m, id[M_PROC_EVICT], NULL, NULL, (double)ps.proc_evictions, 0);
	metrics__set(m, id[M_PROC_BYTES], NULL, NULL, (double)ps.proc_bytes, 0);
	metrics__set(m, id[M_PROC_MAPS_CUT], NULL, NULL, (double)ps.proc_maps_truncated, 0);
	metrics__set(m, id[M_ELF], NULL, NULL, (double)ps.elf_files, 0);
	for (int v = PY_MINOR_MIN; v <= PY_MINOR_MAX; v++) {
		char ver[8];

		snprintf(ver, sizeof(ver), "3.%d", v);
		metrics__set(m, id[M_PY_PROCS], "version", ver, (double)ps.python.procs[v], 0);
	}
	metrics__set(m, id[M_PY_UNSUPPORTED], NULL, NULL, (double)ps.python.procs_unsupported, 0);
	metrics__set(m, id[M_PY_SAMPLES], NULL, NULL, (double)ps.python.samples, 0);
	metrics__set(m, id[M_PY_FRAMES], "result", "named", (double)ps.python.frames, 0);
	for (int i = 0; i < PYCODE_FAIL__COUNT; i++)
		metrics__set(m, id[M_PY_FRAMES], "result", pycode_fail_names[i],
			     (double)ps.python.frames_failed_by[i], 0);
	metrics__set(m, id[M_PY_MERGE], "result", "exact", (double)ps.python.merged_exact, 0);
	metrics__set(m, id[M_PY_MERGE], "result", "mismatch", (double)ps.python.merged_mismatch, 0);
	metrics__set(m, id[M_PY_CODE_BYTES], NULL, NULL, (double)ps.python.code.bytes, 0);
	metrics__set(m, id[M_PY_CODE_EVICT], NULL, NULL, (double)ps.python.code.evictions, 0);
	metrics__set(m, id[M_PY_LINES_BUDGET], "reason", "too_large",
		     (double)ps.python.code.lt_too_large, 0);
	metrics__set(m, id[M_PY_LINES_BUDGET], "reason", "budget",
		     (double)ps.python.code.lt_over_budget, 0);
	metrics__set(m, id[M_LCACHE], NULL, NULL, (double)ls.cache_entries, 0);
	metrics__set(m, id[M_LCACHE_EVICT], NULL, NULL, (double)ls.cache_evictions, 0);
	metrics__set(m, id[M_OVERFLOW], NULL, NULL, (double)c.overflow, 0);
	metrics__set(m, id[M_BUILT], NULL, NULL, (double)c.profiles_built, 0);
	metrics__set(m, id[M_PUSHED], NULL, NULL, (double)es.pushed, 0);
	metrics__set(m, id[M_FAILED], NULL, NULL, (double)es.failed, 0);
	metrics__set(m, id[M_RETRIES], NULL, NULL, (double)es.retries, 0);
	metrics__set(m, id[M_REJECTED], NULL, NULL, (double)es.rejected_4xx, 0);
	metrics__set(m, id[M_SPOOLED], NULL, NULL, (double)es.spooled, 0);
	metrics__set(m, id[M_DROPPED], "reason", "spool", (double)es.spool_dropped, 0);
	metrics__set(m, id[M_DROPPED], "reason", "queue", (double)es.queue_dropped, 0);
	metrics__set(m, id[M_LAT], NULL, NULL, (double)es.latency_us_sum / 1e6, es.latency_count);
	metrics__set(m, id[M_LAT_LAST], NULL, NULL, (double)es.last_latency_us / 1e6, 0);
	metrics__set(m, id[M_SPOOL_BYTES], NULL, NULL, (double)es.spool_bytes, 0);
	metrics__set(m, id[M_SPOOL_FILES], NULL, NULL, (double)es.spool_files, 0);
	metrics__set(m, id[M_QUEUE_BYTES], NULL, NULL, (double)es.queue_bytes, 0);
	metrics__set(m, id[M_WINDOWS], NULL, NULL, (double)c.windows, 0);
	metrics__set(m, id[M_CUDA_UNPLACED], NULL, NULL, (double)c.calib_unplaced, 0);
	metrics__set(m, id[M_CPU], NULL, NULL, (double)ps.cpu_ns / 1e9, 0);
	metrics__set(m, id[M_RELOADS], "result", "ok", (double)c.reload_ok, 0);
	metrics__set(m, id[M_RELOADS], "result", "error", (double)c.reload_err, 0);
	metrics__set(m, id[M_K8S_FETCH], NULL, NULL, (double)ls.k8s_fetches, 0);
	metrics__set(m, id[M_K8S_ERR], NULL, NULL, (double)ls.k8s_errors, 0);
	metrics__set(m, id[M_ENCODE_ERR], NULL, NULL, (double)(c.encode_errors + c.submit_errors),
		     0);
	metrics__set(m, id[M_TRIMMED], NULL, NULL, (double)ls.labels_trimmed, 0);
}

/* See agent.h. */
void agent_metrics__snapshot(struct agent *a)
{
	struct pipeline_stats ps = {0};
	struct labeler_stats ls;

	if (a->pl)
		pipeline__stats(a->pl, &ps);
	labeler__stats(a->labeler, &ls);
	pthread_mutex_lock(&a->snap_lock);
	a->pst = ps;
	a->have_pst = a->pl != NULL;
	a->lst = ls;
	a->csnap = a->c;
	a->n_inuse_snap = a->n_inuse;
	memcpy(a->inuse_snap, a->inuse, (size_t)a->n_inuse * sizeof(a->inuse[0]));
	a->n_steps_snap = a->n_steps;
	memcpy(a->steps_snap, a->steps, (size_t)a->n_steps * sizeof(a->steps[0]));
	pthread_mutex_unlock(&a->snap_lock);
	atomic_store(&a->heartbeat_ns, (long long)clock__mono_ns());
}

/* See agent.h. */
void agent_metrics__http(void *ctx, const char *path, struct http_response *r)
{
	struct agent *a = ctx;

	if (!strcmp(path, "/metrics")) {
		if (metrics__render(a->metrics, &r->body, &r->body_len)) {
			r->status = 503;
			return;
		}
		r->status = 200;
		r->content_type = "text/plain; version=0.0.4; charset=utf-8";
		return;
	}
	if (!strcmp(path, "/healthz")) {
		/* alive while the main loop turns: it refreshes the heartbeat every second */
		uint64_t age = clock__mono_ns() - (uint64_t)atomic_load(&a->heartbeat_ns);
		uint64_t limit = 3 * a->interval_ns + 30000000000ull;
		bool ok = age < limit;

		r->status = ok ? 200 : 503;
		r->body = strdup(ok ? "ok\n" : "main loop stalled\n");
		r->body_len = r->body ? strlen(r->body) : 0;
		return;
	}
	if (!strcmp(path, "/readyz")) {
		bool ok = atomic_load(&a->ready);

		r->status = ok ? 200 : 503;
		r->body = strdup(ok ? "ready\n" : "starting\n");
		r->body_len = r->body ? strlen(r->body) : 0;
	}
}

/* See agent.h. */
int agent_metrics__setup(struct agent *a)
{
	a->metrics = metrics__new(collect, a);
	if (!a->metrics)
		return -ENOMEM;
	for (int i = 0; i < M__COUNT; i++) {
		int id = metrics__register(a->metrics, metric_defs[i].name, metric_defs[i].type,
					   metric_defs[i].help);
		if (id < 0)
			return id;
		a->metric_ids[i] = id;
	}
	return 0;
}
