// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Text and JSON rendering of records (see format.h).
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "capture.h"
#include "format.h"
#include "sockio.h"

static const char *const tcp_states[] = {
	[1] = "ESTABLISHED", [2] = "SYN_SENT",  [3] = "SYN_RECV",   [4] = "FIN_WAIT1",
	[5] = "FIN_WAIT2",   [6] = "TIME_WAIT", [7] = "CLOSE",      [8] = "CLOSE_WAIT",
	[9] = "LAST_ACK",    [10] = "LISTEN",   [11] = "CLOSING",   [12] = "NEW_SYN_RECV",
};

const char *ls_tcp_state_name(__u32 state)
{
	if (state < sizeof(tcp_states) / sizeof(tcp_states[0]) && tcp_states[state])
		return tcp_states[state];
	return "UNKNOWN";
}

/* Copies a fixed-size kernel string, stopping at NUL or the buffer end, and
 * makes it safe for both text and JSON (no quotes, backslashes, controls). */
static void safe_str(char *dst, size_t dlen, const char *src, size_t slen)
{
	size_t i;

	for (i = 0; i < slen && i + 1 < dlen && src[i]; i++) {
		unsigned char c = src[i];
		dst[i] = (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') ? '?' : c;
	}
	dst[i] = '\0';
}
#define SAFE(dst, field) safe_str(dst, sizeof(dst), field, sizeof(field))

void ls_format_header(FILE *out, const struct ls_file_hdr *h, bool json)
{
	char sources[512], when[64];
	time_t secs = h->realtime_ns / 1000000000ull;
	struct tm tm;

	ls_sources_str(h->sources, sources, sizeof(sources));
	gmtime_r(&secs, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (json) {
		char host[80], rel[80], cmd[600];

		SAFE(host, h->hostname);
		SAFE(rel, h->release);
		SAFE(cmd, h->cmdline);
		fprintf(out,
			"{\"type\":\"header\",\"version\":%u,\"abi\":%u,\"host\":\"%s\","
			"\"kernel\":\"%s\",\"ncpus\":%u,\"realtime_ns\":%llu,\"monotonic_ns\":%llu,"
			"\"sources\":\"%s\",\"track_all\":%s,\"cmdline\":\"%s\"}\n",
			h->version, h->abi_version, host, rel, h->ncpus,
			(unsigned long long)h->realtime_ns, (unsigned long long)h->monotonic_ns,
			sources, h->track_all ? "true" : "false", cmd);
		return;
	}
	fprintf(out, "# latsplit capture v%u (event ABI %u)\n", h->version, h->abi_version);
	fprintf(out, "# host: %s  kernel: %s  arch: %s  cpus: %u\n", h->hostname, h->release,
		h->machine, h->ncpus);
	fprintf(out, "# started: %s (monotonic %llu.%09llu)\n", when,
		(unsigned long long)(h->monotonic_ns / 1000000000ull),
		(unsigned long long)(h->monotonic_ns % 1000000000ull));
	fprintf(out, "# tracking: %s\n", h->track_all ? "all processes" : "selected processes");
	fprintf(out, "# sources: %s\n", sources);
	fprintf(out, "# command: %s\n", h->cmdline);
}

static void tuple_strs(const struct ls_tuple *t, char *l, char *r, size_t len)
{
	ls_addr_str(t->saddr, t->sport, l, len);
	ls_addr_str(t->daddr, t->dport, r, len);
}

#define KV(jfmt, tfmt, ...) fprintf(out, json ? jfmt : tfmt, __VA_ARGS__)

/* Scheduler and process records. false: not one of them. */
static bool body_sched(FILE *out, const struct ls_hdr *rec, bool json)
{
	char c1[LS_COMM_LEN + 1], c2[LS_COMM_LEN + 1];

	switch (rec->type) {
	case LS_EV_SCHED_SWITCH: {
		const struct ls_ev_sched_switch *e = (const void *)rec;
		SAFE(c1, e->prev_comm);
		SAFE(c2, e->next_comm);
		KV(",\"prev_comm\":\"%s\",\"prev_state\":%lld,\"next_pid\":%u,\"next_tid\":%u,"
		   "\"next_comm\":\"%s\"",
		   "%s state=%lld ==> %u/%u %s", c1, (long long)e->prev_state, e->next_pid,
		   e->next_tid, c2);
		if (e->next_woken_dt) /* next's wakeup, folded here */
			KV(",\"woken_ns\":%llu,\"waker_pid\":%u,\"waker_tid\":%u",
			   " woken=-%lluns waker=%u/%u", (unsigned long long)e->next_woken_dt,
			   e->waker_pid, e->waker_tid);
		break;
	}
	case LS_EV_BLOCK_KSTACK: {
		const struct ls_ev_block_kstack *e = (const void *)rec;
		KV(",\"block_ts\":%llu,\"kstack\":%d", "block=-%lluns kstack=%d",
		   json ? (unsigned long long)e->block_ts
			: (unsigned long long)(rec->ts - e->block_ts),
		   e->kstack);
		break;
	}
	case LS_EV_SCHED_WAKEUP:
	case LS_EV_SCHED_WAKEUP_NEW: {
		const struct ls_ev_sched_wakeup *e = (const void *)rec;
		SAFE(c1, e->comm);
		KV(",\"comm\":\"%s\",\"target_cpu\":%u,\"waker_pid\":%u,\"waker_tid\":%u",
		   "%s target_cpu=%u waker=%u/%u", c1, e->target_cpu, e->waker_pid, e->waker_tid);
		break;
	}
	case LS_EV_PROC_FORK: {
		const struct ls_ev_proc_fork *e = (const void *)rec;
		SAFE(c1, e->comm);
		KV(",\"child_pid\":%u,\"child_tid\":%u,\"comm\":\"%s\"", "child=%u/%u %s",
		   e->child_pid, e->child_tid, c1);
		break;
	}
	case LS_EV_PROC_EXEC: {
		const struct ls_ev_proc_exec *e = (const void *)rec;
		char fn[LS_FILENAME_LEN + 1];
		SAFE(c1, e->comm);
		SAFE(fn, e->filename);
		KV(",\"comm\":\"%s\",\"filename\":\"%s\",\"old_tid\":%u", "%s %s old_tid=%u", c1, fn,
		   e->old_tid);
		break;
	}
	case LS_EV_PROC_EXIT: {
		const struct ls_ev_proc_exit *e = (const void *)rec;
		SAFE(c1, e->comm);
		KV(",\"comm\":\"%s\",\"exit_code\":%d,\"group_dead\":%s", "%s exit_code=%d%s", c1,
		   e->exit_code, json ? (e->group_dead ? "true" : "false")
				      : (e->group_dead ? " (process)" : ""));
		break;
	}
	default:
		return false;
	}
	return true;
}

/* TCP and socket records. false: not one of them. */
static bool body_net(FILE *out, const struct ls_hdr *rec, bool json)
{
	char a[64], b[64];

	switch (rec->type) {
	case LS_EV_TCP_STATE: {
		const struct ls_ev_tcp_state *e = (const void *)rec;
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"local\":\"%s\",\"remote\":\"%s\",\"old\":\"%s\",\"new\":\"%s\","
		   "\"srtt_us\":%u,\"snd_una\":%u,\"snd_nxt\":%u,\"rcv_nxt\":%u",
		   "conn=%llu %s -> %s %s -> %s srtt=%uus snd_una=%u snd_nxt=%u rcv_nxt=%u",
		   (unsigned long long)e->conn_id, a, b, ls_tcp_state_name(e->oldstate),
		   ls_tcp_state_name(e->newstate), e->srtt_us, e->snd_una, e->snd_nxt, e->rcv_nxt);
		break;
	}
	case LS_EV_TCP_RETRANS: {
		const struct ls_ev_tcp_retrans *e = (const void *)rec;
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"local\":\"%s\",\"remote\":\"%s\",\"kind\":\"%s\",\"segs\":%u,"
		   "\"seq\":%u,\"state\":\"%s\",\"srtt_us\":%u",
		   "conn=%llu %s -> %s %s segs=%u seq=%u %s srtt=%uus",
		   (unsigned long long)e->conn_id, a, b,
		   e->kind == LS_RETRANS_SYNACK ? "synack" : "data", e->segs, e->seq,
		   ls_tcp_state_name(e->state), e->srtt_us);
		break;
	}
	case LS_EV_TCP_PROBE: {
		const struct ls_ev_tcp_probe *e = (const void *)rec;
		KV(",\"conn\":%llu,\"srtt_us\":%u,\"cwnd\":%u,\"snd_una\":%u,\"snd_nxt\":%u,"
		   "\"rcv_nxt\":%u,\"snd_wnd\":%u,\"data_len\":%u,\"seq\":%u,\"ack_seq\":%u,"
		   "\"flags\":%u",
		   "conn=%llu srtt=%uus cwnd=%u snd_una=%u snd_nxt=%u rcv_nxt=%u snd_wnd=%u len=%u "
		   "seq=%u ack=%u flags=0x%x",
		   (unsigned long long)e->conn_id, e->srtt_us, e->snd_cwnd, e->snd_una, e->snd_nxt,
		   e->rcv_nxt, e->snd_wnd, e->data_len, e->seq, e->ack_seq, e->flags);
		break;
	}
	case LS_EV_TCP_RESET: {
		const struct ls_ev_tcp_reset *e = (const void *)rec;
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"local\":\"%s\",\"remote\":\"%s\",\"dir\":\"%s\",\"state\":\"%s\"",
		   "conn=%llu %s -> %s %s in %s", (unsigned long long)e->conn_id, a, b,
		   e->dir == LS_RESET_SENT ? "sent" : "received", ls_tcp_state_name(e->state));
		break;
	}
	case LS_EV_TCP_DESTROY: {
		const struct ls_ev_tcp_destroy *e = (const void *)rec;
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"local\":\"%s\",\"remote\":\"%s\"", "conn=%llu %s -> %s",
		   (unsigned long long)e->conn_id, a, b);
		break;
	}
	case LS_EV_SOCK_IO: {
		const struct ls_ev_sock_io *e = (const void *)rec;
		struct ls_io_piece piece[LS_IO_MAX_PIECES];
		int npieces = ls_io_pieces(e, rec->size, piece);
		char data[96];
		size_t k = 0;

		/* the kept bytes; "|" where a piece ends short of the next one */
		for (int j = 0; j < npieces; j++) {
			for (size_t i = 0; i < piece[j].known && k + 4 < sizeof(data); i++) {
				unsigned char c = piece[j].data[i];
				if (c == '\r' || c == '\n') {
					data[k++] = '\\';
					data[k++] = c == '\r' ? 'r' : 'n';
				} else {
					data[k++] = (c < 0x20 || c >= 0x7f || c == '"' || c == '\\') ? '.' : c;
				}
			}
			if (e->nseg && piece[j].known < piece[j].total && j + 1 < npieces &&
			    k + 4 < sizeof(data))
				data[k++] = '|';
		}
		data[k] = '\0';
		KV(",\"conn\":%llu,\"fd\":%u,\"dir\":\"%s\",\"call\":\"%s\",\"bytes\":%u,"
		   "\"ts_enter\":%llu,\"blocked_ns\":%llu,\"seq\":%u,\"cap_len\":%u,\"data\":\"%s\"",
		   "conn=%llu fd=%u %s %s bytes=%u enter=-%lluns blocked=%lluns seq=%u cap=%u \"%s\"",
		   (unsigned long long)e->conn_id, e->fd, e->dir == LS_IO_OUT ? "out" : "in",
		   ls_io_call_name(e->call), e->bytes,
		   json ? (unsigned long long)e->ts_enter
			: (unsigned long long)(rec->ts - e->ts_enter),
		   (unsigned long long)e->blocked_ns, e->seq, e->cap_len, data);
		if (e->nseg)
			KV(",\"pieces\":%u", " pieces=%u", e->nseg);
		if (e->xmit & LS_IO_XMIT) /* the one segment it left in, folded here */
			KV(",\"xmit_ns\":%u,\"xmit_hold\":\"%s\"", " xmit=+%uns%s",
			   e->xmit & LS_IO_XMIT_DT,
			   e->xmit & LS_IO_XMIT_NAGLE ? (json ? "nagle" : " nagle")
			   : e->xmit & LS_IO_XMIT_RWND ? (json ? "rwnd" : " rwnd")
						       : "");
		if (e->arrive_dt) /* the segment its bytes came in, folded here */
			KV(",\"arrive_ns\":%u,\"arrive_len\":%u,\"arrive_ack\":%u,"
			   "\"arrive_srtt_us\":%u,\"arrive_flags\":%u",
			   " arrived=-%uns len=%u ack=%u srtt=%uus flags=0x%02x", e->arrive_dt,
			   e->arrive_len_flags >> 8, e->arrive_ack, e->arrive_srtt_us,
			   e->arrive_len_flags & 0xff);
		break;
	}
	case LS_EV_SOCK_ACCEPT: {
		const struct ls_ev_sock_accept *e = (const void *)rec;
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"fd\":%u,\"local\":\"%s\",\"remote\":\"%s\"",
		   "conn=%llu fd=%u %s <- %s", (unsigned long long)e->conn_id, e->fd, a, b);
		break;
	}
	case LS_EV_CONN_ADOPT: {
		const struct ls_ev_conn_adopt *e = (const void *)rec;
		static const char *const vias[] = {"io", "accept", "tcp"};
		tuple_strs(&e->t, a, b, sizeof(a));
		KV(",\"conn\":%llu,\"local\":\"%s\",\"remote\":\"%s\",\"via\":\"%s\","
		   "\"state\":\"%s\",\"fd\":%d,\"srtt_us\":%u,\"snd_una\":%u,\"write_seq\":%u,"
		   "\"copied_seq\":%u,\"rcv_nxt\":%u",
		   "conn=%llu %s <- %s via=%s %s fd=%d srtt=%uus snd_una=%u write_seq=%u "
		   "copied_seq=%u rcv_nxt=%u",
		   (unsigned long long)e->conn_id, a, b, e->via < 3 ? vias[e->via] : "?",
		   ls_tcp_state_name(e->state), (int)e->fd, e->srtt_us, e->snd_una, e->write_seq,
		   e->copied_seq, e->rcv_nxt);
		if (rec->size >= sizeof(*e)) /* older captures' records end before it */
			KV(",\"rtt_min_us\":%u", " rtt_min=%uus", e->rtt_min_us);
		break;
	}
	case LS_EV_TCP_XMIT: {
		const struct ls_ev_tcp_xmit *e = (const void *)rec;
		KV(",\"conn\":%llu,\"seq\":%u,\"len\":%u,\"flags\":%u,\"snd_una\":%u,"
		   "\"snd_wnd\":%u,\"snd_cwnd\":%u,\"packets_out\":%u,\"mss\":%u,\"nodelay\":%s",
		   "conn=%llu seq=%u len=%u flags=0x%02x snd_una=%u snd_wnd=%u cwnd=%u "
		   "packets_out=%u mss=%u%s",
		   (unsigned long long)e->conn_id, e->seq, e->len, e->flags, e->snd_una, e->snd_wnd,
		   e->snd_cwnd, e->packets_out, e->mss_cache, e->nodelay ? (json ? "true" : " nodelay")
									   : (json ? "false" : ""));
		break;
	}
	case LS_EV_SOCK_CLOSE: {
		const struct ls_ev_sock_close *e = (const void *)rec;
		KV(",\"conn\":%llu,\"fd\":%u", "conn=%llu fd=%u", (unsigned long long)e->conn_id,
		   e->fd);
		break;
	}
	default:
		return false;
	}
	return true;
}

/* Engine and GPU records. false: not one of them. */
static bool body_gpu(FILE *out, const struct ls_hdr *rec, bool json)
{
	switch (rec->type) {
	case LS_EV_ENGINE: {
		const struct ls_ev_engine *e = (const void *)rec;
		static const char *const kinds[] = {"?",          "arrived",   "queued",  "scheduled",
						    "first_token", "preempted", "resumed", "finished"};
		char xr[65];
		SAFE(xr, e->x_request_id);
		KV(",\"req\":%llu,\"event\":\"%s\",\"arg\":%u,\"x_request_id\":\"%s\"",
		   "req=%llu %s arg=%u x_request_id=%s", (unsigned long long)e->req_id,
		   e->kind < 8 ? kinds[e->kind] : "?", e->arg, xr);
		break;
	}
	case LS_REC_ENGINE_SPAN: {
		const struct ls_rec_engine_span *e = (const void *)rec;
		char id[65], tid[33];
		SAFE(id, e->request_id);
		for (int i = 0; i < 16; i++)
			snprintf(tid + 2 * i, 3, "%02x", e->trace_id[i]);
		KV(",\"request_id\":\"%s\",\"trace_id\":\"%s\",\"t_arrived\":%llu,\"t_queued\":%llu,"
		   "\"t_sched\":%llu,\"t_first\":%llu,\"t_finish\":%llu,\"prompt_tokens\":%u,"
		   "\"completion_tokens\":%u",
		   "request_id=%s trace_id=%s arrived=%llu queued=%llu sched=%llu first=%llu "
		   "finish=%llu prompt_tokens=%u completion_tokens=%u",
		   id, tid, (unsigned long long)e->t_arrived, (unsigned long long)e->t_queued,
		   (unsigned long long)e->t_sched, (unsigned long long)e->t_first,
		   (unsigned long long)e->t_finish, e->prompt_tokens, e->completion_tokens);
		break;
	}
	case LS_EV_GPU: {
		const struct ls_ev_gpu *e = (const void *)rec;
		static const char *const kinds[] = {"?", "kernel", "memcpy", "memset", "sync"};
		static const char *const copies[] = {"other", "h2d", "d2h", "d2d"};
		static const char *const srcs[] = {"?", "simulated", "cupti", "uprobe"};
		char name[65];
		SAFE(name, e->name);
		KV(",\"kind\":\"%s\",\"copy\":\"%s\",\"source\":\"%s\",\"start_ns\":%llu,"
		   "\"end_ns\":%llu,\"bytes\":%llu,\"device\":%u,\"stream\":%u,\"correlation\":%u,"
		   "\"flags\":%u,\"name\":\"%s\"",
		   "%s %s %s start=%llu end=%llu bytes=%llu dev=%u stream=%u corr=%u flags=%u %s",
		   e->kind < 5 ? kinds[e->kind] : "?", e->copy_kind < 4 ? copies[e->copy_kind] : "?",
		   e->source < 4 ? srcs[e->source] : "?", (unsigned long long)e->start_ns,
		   (unsigned long long)e->end_ns, (unsigned long long)e->bytes, e->device, e->stream,
		   e->correlation, e->flags, name);
		break;
	}
	case LS_EV_GPU_LAUNCH: {
		const struct ls_ev_gpu_launch *e = (const void *)rec;
		KV(",\"correlation\":%u,\"ustack\":%d", "corr=%u ustack=%d", e->correlation, e->ustack);
		break;
	}
	case LS_EV_GPU_STATS: {
		const struct ls_ev_gpu_stats *e = (const void *)rec;
		KV(",\"records\":%llu,\"bad_time\":%llu,\"cupti_dropped\":%llu,\"refused_buffers\":%llu",
		   "records=%llu bad_time=%llu cupti_dropped=%llu refused_buffers=%llu",
		   (unsigned long long)e->records, (unsigned long long)e->bad_time,
		   (unsigned long long)e->cupti_dropped, (unsigned long long)e->refused_buffers);
		break;
	}
	default:
		return false;
	}
	return true;
}

/* Stack, sample and metadata records. false: not one of them. */
static bool body_meta(FILE *out, const struct ls_hdr *rec, bool json)
{
	char c1[LS_COMM_LEN + 1];

	switch (rec->type) {
	case LS_EV_SAMPLE: {
		const struct ls_ev_sample *e = (const void *)rec;
		SAFE(c1, e->comm);
		KV(",\"comm\":\"%s\",\"ustack\":%d,\"kstack\":%d", "%s ustack=%d kstack=%d", c1,
		   e->ustack, e->kstack);
		break;
	}
	case LS_EV_PYSTACK: {
		const struct ls_ev_pystack *e = (const void *)rec;
		size_t n = (rec->size - offsetof(struct ls_ev_pystack, f)) / sizeof(e->f[0]);
		if (n > e->n)
			n = e->n;
		KV(",\"kind\":\"%s\",\"frames\":%u,\"truncated\":%s,\"innermost\":\"0x%llx@%u\"",
		   "%s frames=%u%s innermost=0x%llx@%u",
		   e->kind == LS_PY_BLOCK ? "block" : e->kind == LS_PY_LAUNCH ? "launch" : "sample", e->n,
		   json ? (e->truncated ? "true" : "false") : (e->truncated ? " truncated" : ""),
		   n ? (unsigned long long)e->f[0].code : 0ull, n ? e->f[0].lasti : 0);
		break;
	}
	case LS_REC_USTACK: {
		const struct ls_rec_ustack *e = (const void *)rec;
		static const char *const how[] = {"ok", "no_cfi", "stack_end", "error"};
		KV(",\"kind\":\"%s\",\"frames\":%u,\"stopped\":\"%s\"", "%s frames=%u stopped=%s",
		   e->kind == LS_PY_BLOCK ? "block" : e->kind == LS_PY_LAUNCH ? "launch" : "sample", e->n,
		   how[e->status & 3]);
		break;
	}
	case LS_REC_STACK: {
		const struct ls_rec_stack *e = (const void *)rec;
		KV(",\"id\":%d,\"depth\":%u", "id=%d depth=%u", e->id, e->nips);
		break;
	}
	case LS_REC_SYM: {
		const struct ls_rec_sym *e = (const void *)rec;
		char name[128];
		size_t n = rec->size - sizeof(*e);
		safe_str(name, sizeof(name), (const char *)(e + 1), n);
		KV(",\"ip\":%llu,\"name\":\"%s\"", "ip=0x%llx %s", (unsigned long long)e->ip, name);
		break;
	}
	case LS_REC_MAPPING: {
		const struct ls_rec_mapping *e = (const void *)rec;
		char path[256], id[41] = "";
		safe_str(path, sizeof(path), (const char *)(e + 1), rec->size - sizeof(*e));
		for (__u32 i = 0; i < e->build_id_len && i < sizeof(e->build_id); i++)
			snprintf(id + 2 * i, sizeof(id) - 2 * i, "%02x", e->build_id[i]);
		KV(",\"start\":%llu,\"end\":%llu,\"pgoff\":%llu,\"build_id\":\"%s\",\"path\":\"%s\"",
		   "0x%llx-0x%llx pgoff=0x%llx build_id=%s %s", (unsigned long long)e->start,
		   (unsigned long long)e->end, (unsigned long long)e->pgoff, id[0] ? id : "-", path);
		break;
	}
	case LS_REC_PROC_INFO: {
		const struct ls_rec_proc_info *e = (const void *)rec;
		char exe[257], cmd[512];
		size_t n = e->cmdline_len, i;
		const char *args = (const char *)(e + 1);

		if (n > rec->size - sizeof(*e))
			n = rec->size - sizeof(*e);
		if (n > sizeof(cmd) - 1)
			n = sizeof(cmd) - 1;
		for (i = 0; i < n; i++) {
			unsigned char ch = args[i];
			cmd[i] = ch == 0 ? ' ' : (ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\') ? '?' : ch;
		}
		while (i && cmd[i - 1] == ' ')
			i--;
		cmd[i] = '\0';
		SAFE(c1, e->comm);
		SAFE(exe, e->exe);
		KV(",\"ppid\":%u,\"comm\":\"%s\",\"exe\":\"%s\",\"cmdline\":\"%s\"",
		   "ppid=%u comm=%s exe=%s cmdline=%s", e->ppid, c1, exe, cmd);
		break;
	}
	case LS_REC_PROC_NS: {
		const struct ls_rec_proc_ns *e = (const void *)rec;
		char cg[1024];
		safe_str(cg, sizeof(cg), (const char *)(e + 1), rec->size - sizeof(*e));
		KV(",\"ns_pid\":%u,\"own_pidns\":%s,\"own_mntns\":%s,\"pidns\":%llu,\"mntns\":%llu,"
		   "\"cgroup\":\"%s\"",
		   "ns_pid=%u own_pidns=%s own_mntns=%s pidns=%llu mntns=%llu cgroup=%s", e->ns_pid,
		   e->flags & LS_NS_OWN_PID ? "true" : "false", e->flags & LS_NS_OWN_MNT ? "true" : "false",
		   (unsigned long long)e->pidns, (unsigned long long)e->mntns, cg);
		break;
	}
	case LS_REC_DROPS: {
		const struct ls_rec_drops *e = (const void *)rec;
		KV(",\"total\":%llu,\"ncpu\":%u,\"stack_errors\":%llu", "total=%llu ncpu=%u stack_errors=%llu",
		   (unsigned long long)e->total, e->ncpu, (unsigned long long)e->stack_errors);
		break;
	}
	case LS_REC_PROBE_SKIPS: {
		const struct ls_rec_probe_skips *e = (const void *)rec;
		char top[sizeof(e->top) + 1];

		SAFE(top, e->top);
		KV(",\"total\":%llu,\"top\":\"%s\",\"top_n\":%llu", "total=%llu top=%s top_n=%llu",
		   (unsigned long long)e->total, top, (unsigned long long)e->top_n);
		break;
	}
	case LS_REC_STATS: {
		const struct ls_rec_stats *e = (const void *)rec;
		__u64 dur = e->end_ts - e->start_ts;

		KV(",\"events\":%llu,\"ringbuf_drops\":%llu,\"writer_stalls\":%llu,"
		   "\"writer_stall_ns\":%llu",
		   "events=%llu ringbuf_drops=%llu writer_stalls=%llu writer_stall_ns=%llu",
		   (unsigned long long)e->events, (unsigned long long)e->ringbuf_drops,
		   (unsigned long long)e->writer_stalls, (unsigned long long)e->writer_stall_ns);
		if (json)
			fprintf(out, ",\"duration_ns\":%llu,\"start_ts\":%llu,\"end_ts\":%llu",
				(unsigned long long)dur, (unsigned long long)e->start_ts,
				(unsigned long long)e->end_ts);
		else
			fprintf(out, " duration=%.3fs", dur / 1e9);
		break;
	}
	default:
		return false;
	}
	return true;
}

/* Fields after the common prefix, as text (json=false) or JSON members. */
static void body(FILE *out, const struct ls_hdr *rec, bool json)
{
	if (!body_sched(out, rec, json) && !body_net(out, rec, json) && !body_gpu(out, rec, json) &&
	    !body_meta(out, rec, json))
		KV(",\"size\":%u", "size=%u", rec->size);
}
#undef KV

void ls_format_record(FILE *out, const struct ls_hdr *rec, __u64 base_ts, bool json)
{
	if (json) {
		fprintf(out, "{\"type\":\"%s\",\"ts\":%llu,\"cpu\":%u,\"pid\":%u,\"tid\":%u",
			ls_type_name(rec->type), (unsigned long long)rec->ts, rec->cpu, rec->pid,
			rec->tid);
		body(out, rec, true);
		fputs("}\n", out);
		return;
	}
	__u64 t = rec->ts >= base_ts ? rec->ts - base_ts : 0;
	fprintf(out, "%7u/%-7u [%03u] %6llu.%09llu: %-16s ", rec->pid, rec->tid, rec->cpu,
		(unsigned long long)(t / 1000000000ull), (unsigned long long)(t % 1000000000ull),
		ls_type_name(rec->type));
	body(out, rec, false);
	fputc('\n', out);
}

void ls_fmt_ms(char *buf, size_t len, uint64_t ns)
{
	if (ns == LS_NULL)
		snprintf(buf, len, "-");
	else if (ns < 10000000ull)
		snprintf(buf, len, "%.3f", ns / 1e6);
	else
		snprintf(buf, len, "%.1f", ns / 1e6);
}
