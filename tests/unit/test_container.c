// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container names from cgroup paths as the runtimes write them (paths
 * from their documentation and from hosts running them). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "container.h"
#include "latsplit/events.h"

#define ID "3f4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3c2d1e0f9e8d7c6b5a49382716a"

static void expect(const char *cgroup, uint32_t flags, const char *runtime, const char *name)
{
	struct ls_container c;
	bool found = ls_container_name(cgroup, flags, 4026532000ull, &c);

	if (!name) {
		assert_false(found);
		return;
	}
	assert_true(found);
	assert_string_equal(c.runtime, runtime);
	assert_string_equal(c.name, name);
}

static void test_runtimes(void **state)
{
	(void)state;
	/* Docker, systemd and cgroupfs drivers */
	expect("/system.slice/docker-" ID ".scope", 0, "docker", "docker 3f4e5d6c7b8a");
	expect("/docker/" ID, 0, "docker", "docker 3f4e5d6c7b8a");
	/* Kubernetes with containerd (systemd driver), and cgroupfs */
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1a2b3c4d_5e6f_7a8b_9c0d_"
	       "1e2f3a4b5c6d.slice/cri-containerd-" ID ".scope",
	       0, "containerd", "containerd 3f4e5d6c7b8a");
	expect("/kubepods/burstable/pod1a2b3c4d-5e6f-7a8b-9c0d-1e2f3a4b5c6d/" ID, 0, "kubepods",
	       "kubepods 3f4e5d6c7b8a");
	/* CRI-O: the container, not its monitor */
	expect("/kubepods.slice/kubepods-pod1.slice/crio-" ID ".scope", 0, "cri-o", "cri-o 3f4e5d6c7b8a");
	expect("/kubepods.slice/kubepods-pod1.slice/crio-conmon-" ID ".scope", 0, NULL, NULL);
	/* Podman */
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope", 0,
	       "podman", "podman 3f4e5d6c7b8a");
	/* an id under no runtime we know */
	expect("/mystuff/" ID, 0, "", "container 3f4e5d6c7b8a");
}

static void test_no_id(void **state)
{
	(void)state;
	/* the host's processes */
	expect("/user.slice/user-0.slice/session-1.scope", 0, NULL, NULL);
	expect("/", 0, NULL, NULL);
	expect("", 0, NULL, NULL);
	/* namespaces of its own: named by its cgroup, or its pid namespace */
	expect("/latsplit-test.slice/engine", LS_NS_OWN_PID, "", "/latsplit-test.slice/engine");
	expect("/", LS_NS_OWN_MNT, "", "pidns 4026532000");
	/* not an id: 63 or 65 hex digits, or a non-hex letter */
	expect("/docker/" "3f4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3c2d1e0f9e8d7c6b5a49382716", 0, NULL, NULL);
	expect("/docker/" ID "0", 0, NULL, NULL);
	expect("/docker/" "3f4e5d6c7b8a9f0e1d2c3b4a5968778695a4b3c2d1e0f9e8d7c6b5a49382716g", 0, NULL, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_runtimes),
		cmocka_unit_test(test_no_id),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
