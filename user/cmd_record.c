// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * `latsplit record`: flags and wiring. The options are record/options.c,
 * the recording record/session.c.
 */
#include "cli.h"
#include "options.h"
#include "session.h"

int cmd_record(int argc, char **argv)
{
	return ls_record_main(argc, argv, NULL);
}

int ls_record_main(int argc, char **argv, void (*top_usage)(FILE *out))
{
	struct ls_rec_opts o;
	int rc = ls_rec_opts_parse(&o, argc, argv, top_usage != NULL, top_usage);

	if (rc)
		return rc > 0 ? 0 : EXIT_USAGE;
	return ls_session_run(&o, argc, argv);
}
