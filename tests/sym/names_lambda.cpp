// SPDX-License-Identifier: MIT
// Two lambdas of one signature, inlined into run<> and also kept out of line.
#include <cstdio>
#include <cstdlib>

// The lambdas' bodies are inlined into each run<> instance; their
// addresses, taken below, also make the compiler emit each one out of
// line, under its mangled name (main::{lambda(int)#1}::operator()...).
template <class F> __attribute__((noinline)) double run(const F &f, int n)
{
	double s = 0;

	for (int i = 0; i < n; i++)
		s += f(i);
	return s;
}

template <class F> static double (F::*member(const F &))(int) const
{
	return &F::operator();
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1000;
	double k = argc, s = 0;
	auto a = [k](int i) { return (i * k) / (i + 1.5); };
	auto b = [k](int i) { return (i + k) * (i - 0.5); };
	auto volatile pa = member(a);
	auto volatile pb = member(b);

	for (int r = 0; r < 10; r++)
		s += run(a, n) + run(b, n) + (a.*pa)(r) + (b.*pb)(r);
	printf("%f\n", s);
	return 0;
}
