// SPDX-License-Identifier: Apache-2.0
// Rust workload with known call chains for the Rust symbol tests: a leaf in a nested module,
// a trait method, a generic function, and a plain function, each never inlined.
// Usage: rust_chains SECONDS   (prints one JSON line when done)
use std::time::{Duration, Instant};

mod outer {
    pub mod inner {
        #[inline(never)]
        pub fn spin_leaf(n: u64) -> u64 {
            let mut x = n;
            for i in 0..n {
                // volatile: the loop stays a loop (no closed form, no vectorized shortcut)
                unsafe {
                    std::ptr::write_volatile(
                        &mut x,
                        x.wrapping_mul(6364136223846793005).wrapping_add(i),
                    )
                };
            }
            x
        }
    }

    pub trait Work {
        fn work(&self, n: u64) -> u64;
    }

    pub struct Burner;

    impl Work for Burner {
        #[inline(never)]
        fn work(&self, n: u64) -> u64 {
            inner::spin_leaf(n) ^ 1
        }
    }

    #[inline(never)]
    pub fn generic_step<T: Work>(w: &T, n: u64) -> u64 {
        w.work(n).rotate_left(3)
    }
}

#[inline(never)]
fn run(secs: f64) -> u64 {
    let end = Instant::now() + Duration::from_secs_f64(secs);
    let mut acc = 0u64;
    let mut calls = 0u64;
    while Instant::now() < end {
        acc ^= outer::generic_step(&outer::Burner, 200_000);
        calls += 1;
    }
    acc.wrapping_add(calls)
}

fn main() {
    let secs: f64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let acc = run(secs);
    println!("{{\"acc\": {}}}", acc);
}
