// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A forged CPython for tests/unit/test_pyrecord.c, built as
 * libpython3.11.so: the two symbols record's Python detector looks for
 * (_PyRuntime, Py_Version 3.11) and nothing else, as an unprivileged user
 * could make one. What its "frames" point at is forged by the test.
 */
char _PyRuntime[4096];
const unsigned int Py_Version = 0x030b00f0;
