// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `dump`'s sink (see dump.h).
 */
#include "dump.h"
#include "format.h"

static int dump_begin(void *ctx, const struct ls_file_hdr *h)
{
	struct ls_dump *d = ctx;

	d->base = d->absolute ? 0 : h->monotonic_ns;
	if (d->header)
		ls_format_header(d->out, h, d->json);
	return 0;
}

static int dump_record(void *ctx, const struct ls_hdr *rec)
{
	struct ls_dump *d = ctx;

	ls_format_record(d->out, rec, d->base, d->json);
	d->events++;
	if (rec->type == LS_REC_DROPS && rec->size >= sizeof(struct ls_rec_drops))
		d->drops = ((const struct ls_rec_drops *)rec)->total;
	return 0;
}

static int dump_end(void *ctx, struct ls_analysis *a)
{
	struct ls_dump *d = ctx;

	if (!d->json)
		fprintf(d->out, "# %llu records; ring-buffer drops: %llu%s\n",
			(unsigned long long)d->events, (unsigned long long)d->drops,
			a->late ? " (some records later than the reorder window)" : "");
	return 0;
}

struct ls_sink ls_dump_sink(struct ls_dump *d)
{
	return (struct ls_sink){.name = "dump", .begin = dump_begin, .record = dump_record,
				.end = dump_end, .ctx = d};
}
