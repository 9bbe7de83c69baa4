/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One recording, from attaching to the capture's trailer: `record` and
 * `top` parse their options (options.h), then run this.
 */
#ifndef LATSPLIT_RECORD_SESSION_H
#define LATSPLIT_RECORD_SESSION_H

#include "options.h"

/* argv: as main has it (the header keeps the command line). Returns the
 * exit code: 0, 1, or the traced command's own. */
int ls_session_run(struct ls_rec_opts *o, int argc, char **argv);

#endif
