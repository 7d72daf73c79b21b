// SPDX-License-Identifier: MIT
// CPU-bound Rust for the demangling tests (issue 12): generics, a trait
// object and a closure, built with plain rustc -O2 without frame pointers
// by test_runtimes.py, once with legacy and once with v0 mangling.
//   rs_nested SECONDS   (of CPU time: libc's clock(), no crates)
use std::hint::black_box;

extern "C" {
    fn clock() -> std::os::raw::c_long;
}

fn cpu_seconds() -> f64 {
    // CLOCKS_PER_SEC is 1000000 on Linux (POSIX).
    unsafe { clock() as f64 / 1e6 }
}

mod engine {
    pub struct Heavy<T> {
        pub data: Vec<T>,
    }

    impl<T: Copy + Into<u64>> Heavy<T> {
        #[inline(never)]
        pub fn spin(&self, rounds: u32) -> u64 {
            let mut s = 0u64;
            for _ in 0..rounds {
                for &x in &self.data {
                    s = s.wrapping_mul(31).wrapping_add(x.into());
                }
            }
            s
        }
    }

    pub trait Runner {
        fn run(&self, n: u32) -> u64;
    }

    impl Runner for Heavy<u32> {
        #[inline(never)]
        fn run(&self, n: u32) -> u64 {
            super::black_box(self.spin(n))
        }
    }
}

#[inline(never)]
fn drive<F: Fn(u32) -> u64>(f: F, secs: f64) -> u64 {
    let end = cpu_seconds() + secs;
    let mut acc = 0u64;
    while cpu_seconds() < end {
        acc ^= f(black_box(64));
    }
    acc
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(1.0);
    let h = engine::Heavy { data: vec![7u32; 512] };
    let r: &dyn engine::Runner = &h;
    let out = drive(|n| r.run(n), secs);
    std::process::exit(if out == 42 { 1 } else { 0 });
}
