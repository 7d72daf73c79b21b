// SPDX-License-Identifier: MIT
// CPU-bound C++ for the demangling tests (issue 12): a class template in an
// anonymous namespace, a function template taking a lambda, overloads and
// an operator, built -O2 without frame pointers by test_runtimes.py.
//   cxx_nested SECONDS   (of CPU time)
#include <cstdlib>
#include <ctime>
#include <string>
#include <vector>

namespace ns
{
namespace
{
template <typename T, int N> struct Heavy {
	std::vector<T> v;
	__attribute__((noinline)) T spin(const std::string &tag) const
	{
		T s = 0;
		for (int k = 0; k < N; k++)
			for (T x : v)
				s = s * 31 + x + (T)tag.size();
		return s;
	}
};
} // namespace

struct Acc {
	long total;
	__attribute__((noinline)) Acc &operator+=(long x)
	{
		total ^= x;
		return *this;
	}
};

template <typename F> __attribute__((noinline)) long drive(F f, double seconds)
{
	std::clock_t end =
		std::clock() + (std::clock_t)(seconds * CLOCKS_PER_SEC);
	Acc acc{ 0 };
	while (std::clock() < end)
		acc += f(3);
	return acc.total;
}
} // namespace ns

int main(int argc, char **argv)
{
	double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
	ns::Heavy<long, 64> h{ std::vector<long>(512, 7) };
	std::string tag = "stackpulse";
	long r = ns::drive([&](int k) { return h.spin(tag) + k; }, seconds);
	return r == 42 ? 1 : 0;
}
