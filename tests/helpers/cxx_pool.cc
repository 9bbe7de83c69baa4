// A C++ thread pool whose hot path is a named chain, built by the tests
// -O2 -fomit-frame-pointer (issue 28): start_thread -> (libstdc++'s thread
// trampoline) -> pool::ThreadPool::worker_loop -> (run_task, a tail call)
// -> the task's lambda -> pool::stage_a -> stage_b -> stage_c -> pool::Kernel<double>::spin.
// Argument: the number of tasks (each ~5 M multiply-adds).
#include <cstdlib>
#include <thread>
#include <vector>
#include <mutex>
#include <condition_variable>
#include <functional>
#include <queue>
namespace pool {
struct Task { long n; double out; };
template <typename T> struct Kernel {
	__attribute__((noinline)) static T spin(long n)
	{ T x = 1; for (long i = 0; i < n; i++) x = x * (T)1.0000001 + (T)1e-9; return x; }
};
__attribute__((noinline)) double stage_c(long n) { return Kernel<double>::spin(n) + 1; }
__attribute__((noinline)) double stage_b(long n) { return stage_c(n) * 2; }
__attribute__((noinline)) double stage_a(long n) { return stage_b(n) - 1; }
class ThreadPool {
public:
	explicit ThreadPool(int n) { for (int i = 0; i < n; i++) th.emplace_back([this] { worker_loop(); }); }
	~ThreadPool() { { std::lock_guard<std::mutex> g(m); done = true; } cv.notify_all(); for (auto &t : th) t.join(); }
	void submit(std::function<void()> f) { { std::lock_guard<std::mutex> g(m); q.push(std::move(f)); } cv.notify_one(); }
private:
	__attribute__((noinline)) void worker_loop() {
		for (;;) {
			std::function<void()> f;
			{ std::unique_lock<std::mutex> l(m); cv.wait(l, [this] { return done || !q.empty(); });
			  if (q.empty()) return; f = std::move(q.front()); q.pop(); }
			run_task(f);
		}
	}
	__attribute__((noinline)) void run_task(std::function<void()> &f) { f(); }
	std::vector<std::thread> th; std::mutex m; std::condition_variable cv; std::queue<std::function<void()>> q; bool done = false;
};
}
int main(int argc, char **argv)
{
	long tasks = argc > 1 ? atol(argv[1]) : 40, n = 5000000;
	volatile double sink = 0;
	{
		pool::ThreadPool p(2);
		for (long t = 0; t < tasks; t++) p.submit([&sink, n] { sink = sink + pool::stage_a(n); });
	}
	return sink > 0 ? 0 : 1;
}
