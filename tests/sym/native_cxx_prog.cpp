// SPDX-License-Identifier: MIT
// Oracle C++ program for test_native: namespaces, templates, inline methods.
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

// Mangled linkage names, template instances and inlined member functions
// exercise the name rules: inline frames carry the linkage name, as
// eu-addr2line prints them.

namespace nip
{

template <typename T> struct Acc {
	T v{};
	__attribute__((always_inline)) inline void add(T x)
	{
		v = v * 31 + x;
	}
	__attribute__((always_inline)) inline T get() const
	{
		return v ^ (v >> 7);
	}
};

class Table
{
    public:
	__attribute__((noinline)) void put(const std::string &k, uint64_t v)
	{
		Acc<uint64_t> a;
		for (char c : k)
			a.add(static_cast<uint64_t>(c));
		m_[k] = a.get() + v;
	}
	__attribute__((noinline)) uint64_t sum() const
	{
		Acc<uint64_t> a;
		for (const auto &kv : m_)
			a.add(kv.second);
		return a.get();
	}

    private:
	std::map<std::string, uint64_t> m_;
};

template <typename T>
__attribute__((noinline)) T reduce(const std::vector<T> &v)
{
	Acc<T> a;
	for (const T &x : v)
		a.add(x);
	return a.get();
}

} // namespace nip

int main(int argc, char **)
{
	nip::Table t;
	std::vector<uint64_t> v;
	std::vector<int> w;

	for (int i = 0; i < 100 * argc; i++) {
		t.put(std::to_string(i), static_cast<uint64_t>(i));
		v.push_back(static_cast<uint64_t>(i) * 7);
		w.push_back(i);
	}
	std::printf("%llu %llu %d\n", (unsigned long long)t.sum(),
		    (unsigned long long)nip::reduce(v), nip::reduce(w));
	return 0;
}
