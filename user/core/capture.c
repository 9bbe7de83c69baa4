// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Capture file writer and reader (format: include/latsplit/capture.h).
 * Owns the file format; nothing else in latsplit parses it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "capture.h"
#include "columns.h"
#include "latsplit/engine.h"
#include "redact.h"

_Static_assert(LS_PREDICT_VERSION <= LS_FILE_VERSION, "files say which prediction their frames hold");

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

static const struct {
	const char *name;
	size_t min_size;
} type_info[LS_REC_MAX] = {
	[LS_EV_SCHED_SWITCH] = {"sched_switch", sizeof(struct ls_ev_sched_switch)},
	[LS_EV_SCHED_WAKEUP] = {"sched_wakeup", sizeof(struct ls_ev_sched_wakeup)},
	[LS_EV_SCHED_WAKEUP_NEW] = {"sched_wakeup_new", sizeof(struct ls_ev_sched_wakeup)},
	[LS_EV_PROC_FORK] = {"proc_fork", sizeof(struct ls_ev_proc_fork)},
	[LS_EV_PROC_EXEC] = {"proc_exec", sizeof(struct ls_ev_proc_exec)},
	[LS_EV_PROC_EXIT] = {"proc_exit", sizeof(struct ls_ev_proc_exit)},
	[LS_EV_TCP_STATE] = {"tcp_state", sizeof(struct ls_ev_tcp_state)},
	[LS_EV_TCP_RETRANS] = {"tcp_retrans", sizeof(struct ls_ev_tcp_retrans)},
	[LS_EV_TCP_PROBE] = {"tcp_probe", sizeof(struct ls_ev_tcp_probe)},
	[LS_EV_TCP_RESET] = {"tcp_reset", sizeof(struct ls_ev_tcp_reset)},
	[LS_EV_TCP_DESTROY] = {"tcp_destroy", sizeof(struct ls_ev_tcp_destroy)},
	[LS_EV_SOCK_IO] = {"sock_io", sizeof(struct ls_ev_sock_io)},
	[LS_EV_SOCK_ACCEPT] = {"sock_accept", sizeof(struct ls_ev_sock_accept)},
	[LS_EV_SOCK_CLOSE] = {"sock_close", sizeof(struct ls_ev_sock_close)},
	[LS_EV_ENGINE] = {"engine", sizeof(struct ls_ev_engine)},
	[LS_EV_GPU] = {"gpu", sizeof(struct ls_ev_gpu)},
	[LS_EV_GPU_LAUNCH] = {"gpu_launch", sizeof(struct ls_ev_gpu_launch)},
	[LS_EV_GPU_STATS] = {"gpu_stats", sizeof(struct ls_ev_gpu_stats)},
	[LS_EV_SAMPLE] = {"sample", sizeof(struct ls_ev_sample)},
	[LS_EV_CONN_ADOPT] = {"conn_adopt", offsetof(struct ls_ev_conn_adopt, rtt_min_us)},
	[LS_EV_TCP_XMIT] = {"tcp_xmit", sizeof(struct ls_ev_tcp_xmit)},
	[LS_EV_PYSTACK] = {"pystack", offsetof(struct ls_ev_pystack, f)},
	[LS_EV_USTACK_RAW] = {"ustack_raw", offsetof(struct ls_ev_ustack_raw, data)},
	[LS_EV_USTACK_EH] = {"ustack_eh", offsetof(struct ls_ev_ustack_eh, ips)},
	[LS_EV_BLOCK_KSTACK] = {"block_kstack", sizeof(struct ls_ev_block_kstack)},
	[LS_EV_ENGINE_RING] = {"engine_ring", sizeof(struct ls_ev_engine_ring)},
	[LS_REC_USTACK] = {"ustack", sizeof(struct ls_rec_ustack)},
	[LS_REC_STACK] = {"stack", sizeof(struct ls_rec_stack)},
	[LS_REC_SYM] = {"sym", sizeof(struct ls_rec_sym)},
	[LS_REC_MAPPING] = {"mapping", sizeof(struct ls_rec_mapping)},
	[LS_REC_PROC_INFO] = {"proc_info", sizeof(struct ls_rec_proc_info)},
	[LS_REC_PROC_NS] = {"proc_ns", sizeof(struct ls_rec_proc_ns)},
	[LS_REC_ENGINE_SPAN] = {"engine_span", sizeof(struct ls_rec_engine_span)},
	[LS_REC_PROBE_SKIPS] = {"probe_skips", sizeof(struct ls_rec_probe_skips)},
	[LS_REC_DROPS] = {"drops", sizeof(struct ls_rec_drops)},
	[LS_REC_STATS] = {"stats", sizeof(struct ls_rec_stats)},
};

/* engine.h's GPU record is copied whole, by the BPF side, into ls_ev_gpu
 * after its header: the two layouts must agree. */
_Static_assert(sizeof(struct ls_gpu_record) == sizeof(struct ls_ev_gpu) - sizeof(struct ls_hdr),
	       "ls_gpu_record and ls_ev_gpu differ in size");
_Static_assert(offsetof(struct ls_gpu_record, name) ==
		       offsetof(struct ls_ev_gpu, name) - sizeof(struct ls_hdr),
	       "ls_gpu_record and ls_ev_gpu differ in layout");
_Static_assert(offsetof(struct ls_gpu_record, correlation) ==
		       offsetof(struct ls_ev_gpu, correlation) - sizeof(struct ls_hdr),
	       "ls_gpu_record and ls_ev_gpu differ in layout");

size_t ls_record_min_size(__u16 type)
{
	return type < LS_REC_MAX ? type_info[type].min_size : 0;
}

const char *ls_type_name(__u16 type)
{
	if (type < LS_REC_MAX && type_info[type].name)
		return type_info[type].name;
	return "unknown";
}

static const struct {
	__u64 bit;
	const char *name;
} source_names[] = {
	{LS_SRC_SCHED, "sched"},
	{LS_SRC_PROC, "proc"},
	{LS_SRC_TCP_STATE, "tcp_state"},
	{LS_SRC_TCP_RETRANS, "tcp_retransmit"},
	{LS_SRC_TCP_SYNACK, "tcp_retransmit_synack"},
	{LS_SRC_TCP_PROBE, "tcp_probe"},
	{LS_SRC_TCP_RESET, "tcp_reset"},
	{LS_SRC_TCP_DESTROY, "tcp_destroy"},
	{LS_SRC_SOCK_IO, "sock_io"},
	{LS_SRC_ENGINE, "engine_usdt"},
	{LS_SRC_GPU_UPROBE, "libcuda_uprobes"},
	{LS_SRC_SAMPLES, "cpu_samples"},
	{LS_SRC_OFFCPU, "offcpu_stacks"},
	{LS_SRC_TCP_XMIT, "tcp_xmit"},
	{LS_SRC_OTLP_RECV, "otlp_receive"},
	{LS_SRC_SOCK_TP, "sock_io:socket_tp"},
	{LS_SRC_ATTACH_TP_BTF, "via:tp_btf"},
};

void ls_sources_str(__u64 bits, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(source_names) / sizeof(source_names[0]); i++) {
		if (!(bits & source_names[i].bit))
			continue;
		int n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", source_names[i].name);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += n;
	}
	if (!(bits & LS_SRC_ATTACH_TP_BTF) && bits && off < len)
		snprintf(buf + off, len - off, "%svia:raw_tp", off ? "," : "");
}

static __u64 clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

void ls_file_hdr_init(struct ls_file_hdr *hdr, int argc, char **argv)
{
	struct utsname u;
	size_t off = 0;

	memset(hdr, 0, sizeof(*hdr));
	memcpy(hdr->magic, LS_FILE_MAGIC, 8);
	hdr->version = LS_FILE_VERSION;
	hdr->abi_version = LS_ABI_VERSION;
	hdr->hdr_size = sizeof(*hdr);
	hdr->ncpus = sysconf(_SC_NPROCESSORS_CONF);
	hdr->realtime_ns = clock_ns(CLOCK_REALTIME);
	hdr->monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	if (uname(&u) == 0) {
		snprintf(hdr->hostname, sizeof(hdr->hostname), "%s", u.nodename);
		snprintf(hdr->release, sizeof(hdr->release), "%s", u.release);
		snprintf(hdr->machine, sizeof(hdr->machine), "%.31s", u.machine);
	}
	/* NUL-separated first, so credentials are redacted word by word */
	for (int i = 0; i < argc && off < sizeof(hdr->cmdline) - 1; i++) {
		int n = snprintf(hdr->cmdline + off, sizeof(hdr->cmdline) - off, "%s", argv[i]);
		if (n < 0)
			break;
		off += n + 1;
	}
	if (off > sizeof(hdr->cmdline))
		off = sizeof(hdr->cmdline);
	ls_redact_args(hdr->cmdline, off);
	for (size_t i = 0; i + 1 < off; i++)
		if (!hdr->cmdline[i])
			hdr->cmdline[i] = ' ';
	hdr->cmdline[sizeof(hdr->cmdline) - 1] = '\0';
}

static __u32 crc_of(const void *p, size_t len)
{
	return crc32(crc32(0, Z_NULL, 0), p, len);
}

/* ------------------------------------------------------------------ writer */

struct block {
	unsigned char *buf;
	size_t len;
	__u32 nrec;
	__u64 ts_first, ts_last;
	bool last;
};

struct ls_writer {
	int fd;
	int level;
	size_t block_size;
	int nblocks;
	struct block *blocks;
	struct block *cur;

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* FIFO of full blocks (indices), and a stack of free ones. */
	int *full, nfull, full_head;
	int *free_list, nfree;
	bool stopping;

	unsigned char *zbuf;
	size_t zcap;
	unsigned char *cbuf; /* the column-transformed block; NULL: plain frames */
	__u64 seq;
	struct ls_writer_stats st;
};

static int write_all(int fd, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len) {
		ssize_t n = write(fd, c, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		c += n;
		len -= n;
	}
	return 0;
}

/* Compresses and writes one block as a frame (writer thread). */
static int write_frame(struct ls_writer *w, struct block *b)
{
	struct ls_frame_hdr fh;
	uLongf zlen = w->zcap;
	bool predicted = w->cbuf && !ls_predict_encode(b->buf, b->len, b->nrec);
	bool elided = false;
	size_t clen = w->cbuf ? ls_columns_encode_elided(b->buf, b->len, b->nrec, w->cbuf, &elided) : 0;
	const unsigned char *raw = clen && clen <= LS_FRAME_MAX_RAW ? w->cbuf : b->buf;
	size_t rawlen = raw == w->cbuf ? clen : b->len;
	int err;

	/* a plain frame holds the records as they are (should the undo find no
	 * memory, the flag stays: the reader then counts the frame as damaged
	 * rather than read it wrong) */
	if (predicted && raw != w->cbuf)
		predicted = ls_predict_decode(b->buf, b->len, b->nrec, LS_PREDICT_VERSION) != 0;
	if (compress2(w->zbuf, &zlen, raw, rawlen, w->level) != Z_OK)
		return -ENOMEM;
	memset(&fh, 0, sizeof(fh));
	fh.magic = LS_FRAME_MAGIC;
	fh.flags = (b->last ? LS_FRAME_F_LAST : 0) | (raw == w->cbuf ? LS_FRAME_F_COLUMNS : 0) |
		   (raw == w->cbuf && elided ? LS_FRAME_F_CONST : 0) |
		   (predicted ? LS_FRAME_F_PREDICT : 0);
	fh.comp_len = zlen;
	fh.raw_len = rawlen;
	fh.nrec = b->nrec;
	fh.data_crc = crc_of(w->zbuf, zlen);
	fh.seq = w->seq++;
	fh.ts_first = b->ts_first;
	fh.ts_last = b->ts_last;
	fh.hdr_crc = crc_of(&fh, offsetof(struct ls_frame_hdr, hdr_crc));
	err = write_all(w->fd, &fh, sizeof(fh));
	if (!err)
		err = write_all(w->fd, w->zbuf, zlen);
	if (!err) {
		w->st.frames++;
		w->st.file_bytes += sizeof(fh) + zlen;
	}
	return err;
}

static void *writer_main(void *arg)
{
	struct ls_writer *w = arg;

	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (!w->nfull && !w->stopping)
			pthread_cond_wait(&w->cond, &w->lock);
		if (!w->nfull)
			break;
		int idx = w->full[w->full_head];
		w->full_head = (w->full_head + 1) % w->nblocks;
		w->nfull--;
		pthread_mutex_unlock(&w->lock);

		struct block *b = &w->blocks[idx];
		int err = w->st.error ? 0 : write_frame(w, b);

		pthread_mutex_lock(&w->lock);
		if (err && !w->st.error)
			w->st.error = err;
		b->len = 0;
		b->nrec = 0;
		b->last = false;
		w->free_list[w->nfree++] = idx;
		pthread_cond_broadcast(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* Takes a free block, waiting (and counting the wait) if none is free. */
static struct block *take_block(struct ls_writer *w)
{
	struct block *b;

	pthread_mutex_lock(&w->lock);
	if (!w->nfree) {
		__u64 t0 = clock_ns(CLOCK_MONOTONIC);

		w->st.stalls++;
		while (!w->nfree)
			pthread_cond_wait(&w->cond, &w->lock);
		w->st.stall_ns += clock_ns(CLOCK_MONOTONIC) - t0;
	}
	b = &w->blocks[w->free_list[--w->nfree]];
	pthread_mutex_unlock(&w->lock);
	return b;
}

static void submit_block(struct ls_writer *w, struct block *b)
{
	pthread_mutex_lock(&w->lock);
	w->full[(w->full_head + w->nfull) % w->nblocks] = (int)(b - w->blocks);
	w->nfull++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int ls_writer_open(struct ls_writer **out, const char *path, const struct ls_file_hdr *hdr,
		   const struct ls_writer_opts *opts)
{
	struct ls_writer *w = calloc(1, sizeof(*w));
	struct ls_file_hdr h = *hdr;
	int err;

	if (!w)
		return -ENOMEM;
	w->level = opts && opts->zlib_level ? opts->zlib_level : 1;
	w->block_size = opts && opts->block_size ? opts->block_size : 1u << 20;
	w->nblocks = opts && opts->nblocks ? opts->nblocks : 8;
	if (w->block_size > LS_FRAME_MAX_RAW || w->nblocks < 2) {
		free(w);
		return -EINVAL;
	}
	w->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (w->fd < 0) {
		err = -errno;
		free(w);
		return err;
	}
	w->blocks = calloc(w->nblocks, sizeof(*w->blocks));
	w->full = calloc(w->nblocks, sizeof(int));
	w->free_list = calloc(w->nblocks, sizeof(int));
	w->zcap = compressBound(ls_columns_bound(w->block_size, w->block_size / sizeof(struct ls_hdr)));
	w->zbuf = malloc(w->zcap);
	if (!(opts && opts->plain))
		w->cbuf = malloc(ls_columns_bound(w->block_size, w->block_size / sizeof(struct ls_hdr)));
	if (!w->blocks || !w->full || !w->free_list || !w->zbuf || (!(opts && opts->plain) && !w->cbuf))
		goto nomem;
	for (int i = 0; i < w->nblocks; i++) {
		w->blocks[i].buf = malloc(w->block_size);
		if (!w->blocks[i].buf)
			goto nomem;
		w->free_list[w->nfree++] = i;
	}
	h.version = LS_FILE_VERSION; /* the frames are this version's, whoever filled the header */
	h.crc = crc_of(&h, offsetof(struct ls_file_hdr, crc));
	err = write_all(w->fd, &h, sizeof(h));
	if (err)
		goto fail;
	w->st.file_bytes = sizeof(h);
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	w->cur = &w->blocks[w->free_list[--w->nfree]];
	if (pthread_create(&w->thread, NULL, writer_main, w)) {
		err = -EAGAIN;
		goto fail;
	}
	*out = w;
	return 0;
nomem:
	err = -ENOMEM;
fail:
	close(w->fd);
	unlink(path);
	for (int i = 0; w->blocks && i < w->nblocks; i++)
		free(w->blocks[i].buf);
	free(w->blocks);
	free(w->full);
	free(w->free_list);
	free(w->zbuf);
	free(w->cbuf);
	free(w);
	return err;
}

int ls_writer_append(struct ls_writer *w, const struct ls_hdr *rec)
{
	size_t len = rec->size;
	size_t alen = ALIGN8(len);
	struct block *b = w->cur;
	struct ls_hdr *dst;

	if (len < sizeof(*rec) || alen > 0xffff || alen > w->block_size)
		return -EINVAL;
	if (b->len + alen > w->block_size) {
		submit_block(w, b);
		b = w->cur = take_block(w);
	}
	dst = (struct ls_hdr *)(b->buf + b->len);
	memcpy(dst, rec, len);
	memset((unsigned char *)dst + len, 0, alen - len);
	dst->size = alen;
	if (!b->nrec || rec->ts < b->ts_first)
		b->ts_first = rec->ts;
	if (!b->nrec || rec->ts > b->ts_last)
		b->ts_last = rec->ts;
	b->len += alen;
	b->nrec++;
	w->st.records++;
	w->st.raw_bytes += alen;
	return w->st.error;
}

int ls_writer_flush(struct ls_writer *w)
{
	if (!w->cur->nrec)
		return w->st.error;
	submit_block(w, w->cur);
	w->cur = take_block(w);
	return w->st.error;
}

void ls_writer_stats(struct ls_writer *w, struct ls_writer_stats *st)
{
	pthread_mutex_lock(&w->lock);
	*st = w->st;
	pthread_mutex_unlock(&w->lock);
}

int ls_writer_close(struct ls_writer *w, const struct ls_hdr *trailer, struct ls_writer_stats *st)
{
	int err;

	if (trailer) {
		ls_writer_flush(w);
		ls_writer_append(w, trailer);
	}
	w->cur->last = true;
	submit_block(w, w->cur);
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	if (!w->st.error && fsync(w->fd) && errno != EINVAL)
		w->st.error = -errno;
	if (close(w->fd) && !w->st.error)
		w->st.error = -errno;
	err = w->st.error;
	if (st)
		*st = w->st;
	for (int i = 0; i < w->nblocks; i++)
		free(w->blocks[i].buf);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->blocks);
	free(w->full);
	free(w->free_list);
	free(w->zbuf);
	free(w->cbuf);
	free(w);
	return err;
}

/* ------------------------------------------------------------------ reader */

struct ls_reader {
	const unsigned char *map;
	size_t size;
	size_t off; /* next frame header */
	struct ls_file_hdr hdr;
	__u64 next_seq;

	unsigned char *raw;   /* current frame, decompressed */
	unsigned char *cols;  /* a column-transformed frame before decoding */
	size_t colscap;
	unsigned char *whole; /* an elided one's columns whole again */
	size_t wholecap;
	unsigned char *wide; /* an older ABI's record widened to this one's (widen) */
	size_t raw_len, raw_off;
	__u32 raw_nrec, raw_seen;
	__u64 cur_span;
	bool done;
	bool borrowed; /* map is the caller's (ls_reader_open_mem) */
	size_t released; /* map bytes below this were handed back (madvise) */
	struct ls_reader_stats st;
	z_stream zs; /* raw inflate, reset per frame */
	bool zs_ok;
	/* ls_reader_floor: the frames' offsets, in file order, and the least
	 * ts_first of each frame and all after it (from their headers) */
	struct frame_floor {
		size_t off;
		__u64 floor;
	} *floors;
	size_t nfloors, fcur; /* fcur: the frame being read (or past the last) */
	bool floors_done;
	size_t frame_off; /* where the frame being read began */
};

/* Reading is sequential: pages behind the frame being read are handed back
 * every 4 MiB, so a long capture's pages do not pile up in RSS (they are
 * read again from the file should anything look back). */
static void release_behind(struct ls_reader *r)
{
	size_t page = 4096, upto = r->off & ~(page - 1);

	if (r->borrowed || upto < r->released + (4u << 20))
		return;
	madvise((void *)(r->map + r->released), upto - r->released, MADV_DONTNEED);
	r->released = upto;
}

/* The file header at r->map: magic, versions, CRC. 0 or -errno (err set). */
static int reader_check(struct ls_reader *r, const char *path, char *err, size_t errlen)
{
	int e;

	memcpy(&r->hdr, r->map, sizeof(r->hdr));
	if (memcmp(r->hdr.magic, LS_FILE_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a latsplit capture (bad magic)", path);
		e = -EINVAL;
	} else if (r->hdr.version < LS_FILE_VERSION_MIN || r->hdr.version > LS_FILE_VERSION) {
		snprintf(err, errlen,
			 "%s: capture format version %u; this latsplit reads versions %u to %u: "
			 "use a matching latsplit",
			 path, r->hdr.version, LS_FILE_VERSION_MIN, LS_FILE_VERSION);
		e = -EPROTO;
	} else if (r->hdr.crc != crc_of(&r->hdr, offsetof(struct ls_file_hdr, crc))) {
		snprintf(err, errlen, "%s: capture header damaged (CRC mismatch); the file is corrupt",
			 path);
		e = -EBADMSG;
	} else if (r->hdr.abi_version < LS_ABI_VERSION_MIN || r->hdr.abi_version > LS_ABI_VERSION) {
		snprintf(err, errlen, "%s: event ABI version %u; this latsplit reads %u to %u: use a matching latsplit", path,
			 r->hdr.abi_version, LS_ABI_VERSION_MIN, LS_ABI_VERSION);
		e = -EPROTO;
	} else {
		r->hdr.hostname[sizeof(r->hdr.hostname) - 1] = '\0';
		r->hdr.release[sizeof(r->hdr.release) - 1] = '\0';
		r->hdr.machine[sizeof(r->hdr.machine) - 1] = '\0';
		r->hdr.cmdline[sizeof(r->hdr.cmdline) - 1] = '\0';
		r->off = sizeof(r->hdr);
		return 0;
	}
	return e;
}


int ls_reader_open(struct ls_reader **out, const char *path, char *err, size_t errlen)
{
	struct ls_reader *r;
	struct stat sb;
	int fd, e;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		e = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return e;
	}
	if (fstat(fd, &sb) || !S_ISREG(sb.st_mode)) {
		snprintf(err, errlen, "%s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	if ((size_t)sb.st_size < sizeof(struct ls_file_hdr)) {
		snprintf(err, errlen,
			 "%s: not a latsplit capture: %lld bytes, shorter than a header (%zu); "
			 "was record stopped before it started?",
			 path, (long long)sb.st_size, sizeof(struct ls_file_hdr));
		close(fd);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		return -ENOMEM;
	}
	r->size = sb.st_size;
	r->map = mmap(NULL, r->size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (r->map != MAP_FAILED)
		madvise((void *)r->map, r->size, MADV_SEQUENTIAL);
	if (r->map == MAP_FAILED) {
		e = -errno;
		snprintf(err, errlen, "%s: mmap: %s", path, strerror(errno));
		free(r);
		return e;
	}
	e = reader_check(r, path, err, errlen);
	if (!e) {
		*out = r;
		return 0;
	}
	munmap((void *)r->map, r->size);
	free(r);
	return e;
}

int ls_reader_open_mem(struct ls_reader **out, const void *buf, size_t len, char *err,
		       size_t errlen)
{
	struct ls_reader *r;
	int e;

	if (len < sizeof(struct ls_file_hdr)) {
		snprintf(err, errlen, "capture: %zu bytes, shorter than a header", len);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->map = buf;
	r->size = len;
	r->borrowed = true;
	e = reader_check(r, "capture", err, errlen);
	if (e) {
		free(r);
		return e;
	}
	*out = r;
	return 0;
}

const struct ls_file_hdr *ls_reader_header(const struct ls_reader *r)
{
	return &r->hdr;
}

const struct ls_reader_stats *ls_reader_stats(const struct ls_reader *r)
{
	return &r->st;
}

static bool frame_hdr_valid(const struct ls_frame_hdr *fh)
{
	return fh->magic == LS_FRAME_MAGIC &&
	       fh->hdr_crc == crc_of(fh, offsetof(struct ls_frame_hdr, hdr_crc)) &&
	       fh->raw_len <= LS_FRAME_MAX_RAW && fh->comp_len <= compressBound(LS_FRAME_MAX_RAW) &&
	       fh->ts_last >= fh->ts_first;
}

/* uncompress() without the zlib trailer's Adler-32: the frame's CRC32 over
 * these compressed bytes was checked already, and the second checksum over
 * the (larger) decompressed bytes was 7% of report's time. The two-byte zlib
 * header is checked, the deflate data inflated raw. */
static bool unzip(struct ls_reader *r, unsigned char *dst, uLongf *dstlen,
		  const unsigned char *src, size_t srclen)
{
	int e;

	if (srclen < 6 || (src[0] & 0x0f) != Z_DEFLATED || ((src[0] << 8) | src[1]) % 31 ||
	    (src[1] & 0x20) /* preset dictionary */)
		return false;
	if (!r->zs_ok) { /* r is calloc'd: zs starts zeroed, as inflateInit2 wants */
		if (inflateInit2(&r->zs, -MAX_WBITS) != Z_OK)
			return false;
		r->zs_ok = true;
	} else if (inflateReset(&r->zs) != Z_OK) {
		return false;
	}
	r->zs.next_in = (Bytef *)src + 2;
	r->zs.avail_in = srclen - 6;
	unsigned char spare; /* an empty frame: inflate wants room to say so */
	r->zs.next_out = *dstlen ? dst : &spare;
	r->zs.avail_out = *dstlen ? *dstlen : 1;
	e = inflate(&r->zs, Z_FINISH);
	*dstlen = r->zs.total_out;
	return e == Z_STREAM_END;
}

/* *buf (*cap bytes) holds at least n bytes after this (kept across frames);
 * false when there is no memory for them. */
static bool room(unsigned char **buf, size_t *cap, size_t n)
{
	unsigned char *b;

	if (n <= *cap)
		return true;
	if (!(b = realloc(*buf, n)))
		return false;
	*buf = b;
	*cap = n;
	return true;
}

/* Decompresses a frame's records into r->raw (undoing the column transform
 * where the frame has it); false when they do not come out whole. */
static bool inflate_frame(struct ls_reader *r, const struct ls_frame_hdr *fh,
			  const unsigned char *data, uLongf *rawlen)
{
	const unsigned char *cols;
	size_t n, clen;

	if (!(fh->flags & LS_FRAME_F_COLUMNS) || r->hdr.version < 2)
		return !(fh->flags & (LS_FRAME_F_COLUMNS | LS_FRAME_F_PREDICT | LS_FRAME_F_CONST)) &&
		       (r->raw = realloc(r->raw, fh->raw_len ? fh->raw_len : 1)) &&
		       unzip(r, r->raw, rawlen, data, fh->comp_len) &&
		       *rawlen == fh->raw_len;
	if (!room(&r->cols, &r->colscap, fh->raw_len) ||
	    !unzip(r, r->cols, rawlen, data, fh->comp_len) || *rawlen != fh->raw_len)
		return false;
	cols = r->cols;
	clen = fh->raw_len;
	if (fh->flags & LS_FRAME_F_CONST) {
		/* whole columns: the records (at most LS_FRAME_MAX_RAW) and the
		 * header (a byte per record, 8 per group) */
		clen = r->hdr.version < 4 ? 0 : ls_columns_expanded_len(cols, fh->raw_len, fh->nrec);
		if (!clen || clen > 2 * (size_t)LS_FRAME_MAX_RAW || !room(&r->whole, &r->wholecap, clen) ||
		    ls_columns_expand(cols, fh->raw_len, fh->nrec, r->whole, clen))
			return false;
		cols = r->whole;
	}
	n = ls_columns_decoded_len(cols, clen, fh->nrec);
	if (!n || n > LS_FRAME_MAX_RAW || !(r->raw = realloc(r->raw, n)) ||
	    ls_columns_decode(cols, clen, fh->nrec, r->raw, n))
		return false;
	if ((fh->flags & LS_FRAME_F_PREDICT) &&
	    (r->hdr.version < 3 || ls_predict_decode(r->raw, n, fh->nrec, r->hdr.version)))
		return false;
	*rawlen = n;
	return true;
}

static void lose_frame(struct ls_reader *r, const struct ls_frame_hdr *fh)
{
	r->st.records_lost += fh->nrec;
	r->st.lost_ns += fh->ts_last - fh->ts_first;
}

/* Finds the next valid frame header at or after `from`; SIZE_MAX if none. */
static size_t resync(struct ls_reader *r, size_t from)
{
	const __u32 magic = LS_FRAME_MAGIC;

	while (from + sizeof(struct ls_frame_hdr) <= r->size) {
		const unsigned char *p = memmem(r->map + from, r->size - from, &magic, 4);
		struct ls_frame_hdr fh;

		if (!p)
			break;
		from = p - r->map;
		if (from + sizeof(fh) > r->size)
			break;
		memcpy(&fh, p, sizeof(fh));
		if (frame_hdr_valid(&fh))
			return from;
		from++;
	}
	return SIZE_MAX;
}

/* Loads the next good frame into r->raw. false at end of file. */
static bool load_frame(struct ls_reader *r)
{
	struct ls_frame_hdr fh;

	while (!r->done) {
		size_t left = r->size - r->off;

		if (left == 0)
			break;
		if (left < sizeof(fh)) {
			r->st.truncated = true;
			r->st.truncated_at = r->off;
			r->st.bytes_skipped += left;
			break;
		}
		memcpy(&fh, r->map + r->off, sizeof(fh));
		if (!frame_hdr_valid(&fh)) {
			size_t next = resync(r, r->off + 1);

			r->st.frames_bad++;
			if (next == SIZE_MAX) {
				/* No whole frame follows: a cut or garbage tail. */
				r->st.truncated = true;
				r->st.truncated_at = r->off;
				r->st.bytes_skipped += left;
				break;
			}
			r->st.bytes_skipped += next - r->off;
			r->off = next;
			continue;
		}
		if (fh.comp_len > left - sizeof(fh)) {
			r->st.truncated = true;
			r->st.truncated_at = r->off;
			r->st.bytes_skipped += left;
			lose_frame(r, &fh);
			break;
		}
		const unsigned char *data = r->map + r->off + sizeof(fh);
		size_t next_off = r->off + sizeof(fh) + fh.comp_len;
		uLongf rawlen = fh.raw_len;

		if (fh.seq != r->next_seq)
			r->st.seq_gap = true;
		r->next_seq = fh.seq + 1;
		if (crc_of(data, fh.comp_len) != fh.data_crc || !inflate_frame(r, &fh, data, &rawlen)) {
			r->st.frames_bad++;
			r->st.bytes_skipped += next_off - r->off;
			lose_frame(r, &fh);
			r->off = next_off;
			continue;
		}
		r->frame_off = r->off;
		r->off = next_off;
		r->raw_len = rawlen;
		r->raw_off = 0;
		r->raw_nrec = fh.nrec;
		r->raw_seen = 0;
		r->cur_span = fh.ts_last - fh.ts_first;
		r->st.frames_ok++;
		r->st.last_good_seq = fh.seq;
		if (fh.flags & LS_FRAME_F_LAST)
			r->st.complete = true;
		return true;
	}
	r->done = true;
	return false;
}

/* The frame headers from the first frame on, walked as load_frame walks
 * them (past damage by resync, to a header whose frame is cut), and each
 * one's floor. No floors (0) when there is no memory for them. */
static void scan_floors(struct ls_reader *r)
{
	size_t off = sizeof(r->hdr), cap = 0, kept = r->off & ~(size_t)4095;
	struct ls_frame_hdr fh;

	r->floors_done = true;
	while (off + sizeof(fh) <= r->size) {
		/* the walk maps a page per frame, and the kernel its neighbours:
		 * handed back as it goes, not kept in RSS ahead of reading */
		if (!r->borrowed && off >= kept + (4u << 20)) {
			madvise((void *)(r->map + kept), (off & ~(size_t)4095) - kept, MADV_DONTNEED);
			kept = off & ~(size_t)4095;
		}
		memcpy(&fh, r->map + off, sizeof(fh));
		if (!frame_hdr_valid(&fh)) {
			if ((off = resync(r, off + 1)) == SIZE_MAX)
				break;
			continue;
		}
		if (fh.comp_len > r->size - off - sizeof(fh))
			break;
		if (r->nfloors == cap) {
			struct frame_floor *f = realloc(r->floors, (cap = cap ? 2 * cap : 256) * sizeof(*f));
			if (!f) {
				free(r->floors);
				r->floors = NULL;
				r->nfloors = 0;
				return;
			}
			r->floors = f;
		}
		r->floors[r->nfloors++] = (struct frame_floor){off, fh.ts_first};
		off += sizeof(fh) + fh.comp_len;
	}
	for (size_t i = r->nfloors; i-- > 1;)
		if (r->floors[i].floor < r->floors[i - 1].floor)
			r->floors[i - 1].floor = r->floors[i].floor;
	if (!r->borrowed && r->size > kept)
		madvise((void *)(r->map + kept), r->size - kept, MADV_DONTNEED);
}

__u64 ls_reader_floor(struct ls_reader *r)
{
	size_t k;

	if (!r->floors_done)
		scan_floors(r);
	if (!r->nfloors)
		return 0;
	/* the frame being read: the first whose offset is not below its start
	 * (frames skipped as damaged only made the floor lower) */
	while (r->fcur < r->nfloors && r->floors[r->fcur].off < r->frame_off)
		r->fcur++;
	k = r->fcur;
	if (k < r->nfloors && r->floors[k].off == r->frame_off && r->raw_seen == r->raw_nrec)
		k++; /* read whole */
	return k < r->nfloors ? r->floors[k].floor : UINT64_MAX;
}

_Static_assert(offsetof(struct ls_ev_sock_io, arrive_dt) == LS_SOCK_IO_SIZE_V5,
	       "ABI 6 appends to the sock_io record of ABI 5");
_Static_assert(offsetof(struct ls_ev_sched_switch, next_woken_dt) == LS_SCHED_SWITCH_SIZE_V6,
	       "ABI 7 appends to the sched_switch record of ABI 6");

/* How long an older ABI's record of type t is where this one's is longer
 * (fields appended, anything after them moved along), else 0. */
static size_t old_size(__u32 abi, __u16 t)
{
	if (abi < 6 && t == LS_EV_SOCK_IO)
		return LS_SOCK_IO_SIZE_V5;
	if (abi < 7 && t == LS_EV_SCHED_SWITCH)
		return LS_SCHED_SWITCH_SIZE_V6;
	return 0;
}

/* An older ABI's record (its fixed part `old` bytes) as this one has it:
 * the appended fields zero (an ABI 4/5 sock_io: no arrival folded; an ABI
 * 4-6 sched_switch: no wakeup folded) and its payload after them. NULL: no
 * memory (the record is lost). */
static const struct ls_hdr *widen(struct ls_reader *r, const struct ls_hdr *h, size_t old)
{
	const size_t add = ls_record_min_size(h->type) - old;
	struct ls_hdr *w;

	if (h->size + add > 0xffff)
		return NULL;
	if (!r->wide && !(r->wide = malloc(0x10000)))
		return NULL;
	memcpy(r->wide, h, old);
	memset(r->wide + old, 0, add);
	memcpy(r->wide + old + add, (const unsigned char *)h + old, h->size - old);
	w = (struct ls_hdr *)r->wide;
	w->size = (__u16)(h->size + add);
	return w;
}

int ls_reader_next(struct ls_reader *r, const struct ls_hdr **rec)
{
	for (;;) {
		if (r->raw_seen < r->raw_nrec) {
			size_t left = r->raw_len - r->raw_off;
			const struct ls_hdr *h = (const struct ls_hdr *)(r->raw + r->raw_off);
			size_t old = left >= sizeof(*h) ? old_size(r->hdr.abi_version, h->type) : 0;

			/* A CRC-good frame with a bad record: the writer was broken
			 * or the CRC collided. Distrust the rest of the frame. */
			if (left < sizeof(*h) || h->size < sizeof(*h) || h->size > left ||
			    (h->size & 7) ||
			    h->size < (old ? old : ls_record_min_size(h->type))) {
				r->st.frames_bad++;
				r->st.frames_ok--;
				r->st.records_lost += r->raw_nrec - r->raw_seen;
				r->raw_seen = r->raw_nrec;
				continue;
			}
			r->raw_off += h->size;
			r->raw_seen++;
			if (old && !(h = widen(r, h, old))) {
				r->st.records_lost++;
				continue;
			}
			r->st.records++;
			*rec = h;
			return 1;
		}
		release_behind(r);
		if (!load_frame(r))
			return 0;
	}
}

void ls_reader_loss_line(const struct ls_reader *r, char *buf, size_t len)
{
	const struct ls_reader_stats *s = &r->st;
	size_t off = 0;

	buf[0] = '\0';
#define ADD(...)                                                                 \
	do {                                                                     \
		if (off < len) {                                                 \
			int n_ = snprintf(buf + off, len - off, __VA_ARGS__);    \
			if (n_ > 0)                                              \
				off += n_;                                       \
		}                                                                \
	} while (0)
	if (s->frames_bad)
		ADD("%llu damaged frame region(s) skipped; ", (unsigned long long)s->frames_bad);
	if (s->truncated)
		ADD("capture truncated at byte %llu after frame %llu; ",
		    (unsigned long long)s->truncated_at, (unsigned long long)s->last_good_seq);
	if (s->records_lost || s->lost_ns)
		ADD("%llu events (%.3f s) lost; ", (unsigned long long)s->records_lost,
		    s->lost_ns / 1e9);
	if (s->bytes_skipped)
		ADD("%llu bytes unreadable; ", (unsigned long long)s->bytes_skipped);
	if (s->seq_gap)
		ADD("frame numbers jump: whole frames are missing; ");
	if (!s->complete)
		ADD("no end-of-capture trailer (recording was killed or the file was cut)");
	else if (off >= 2 && off < len)
		buf[off - 2] = '\0';
#undef ADD
}

void ls_reader_close(struct ls_reader *r)
{
	if (!r)
		return;
	if (!r->borrowed)
		munmap((void *)r->map, r->size);
	free(r->raw);
	free(r->cols);
	free(r->whole);
	free(r->wide);
	free(r->floors);
	if (r->zs_ok)
		inflateEnd(&r->zs);
	free(r);
}
