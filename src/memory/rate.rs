//! Rate limits per actor: a token bucket each (MEMORY_RATE_BURST tokens, refilled at
//! MEMORY_RATE_PER_SEC), one token a memory call. Burst absorbs an agent's quick
//! sequence of calls; the refill rate bounds a runaway loop. Kept per process: each
//! server limits the calls it serves.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

/// The limiter of one server.
pub(crate) struct RateLimiter {
    burst: f64,
    per_sec: f64,
    buckets: Mutex<HashMap<String, Bucket>>,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at_ms: i64,
}

/// A refused call: how long until a token is back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Refused {
    pub retry_after_s: u64,
    pub limit: u64,
}

impl RateLimiter {
    pub(crate) fn new(burst: u32, per_sec: f64) -> RateLimiter {
        RateLimiter {
            burst: f64::from(burst),
            per_sec,
            buckets: Mutex::new(HashMap::new()),
        }
    }

    /// Takes one token from `actor`'s bucket at `now_ms`, or says when to retry.
    pub(crate) fn take(&self, actor: &str, now_ms: i64) -> Result<(), Refused> {
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let bucket = buckets.entry(actor.to_string()).or_insert(Bucket {
            tokens: self.burst,
            at_ms: now_ms,
        });
        let elapsed_s = (now_ms - bucket.at_ms).max(0) as f64 / 1000.0;
        bucket.tokens = (bucket.tokens + elapsed_s * self.per_sec).min(self.burst);
        bucket.at_ms = now_ms.max(bucket.at_ms);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        let missing = 1.0 - bucket.tokens;
        Err(Refused {
            retry_after_s: (missing / self.per_sec).ceil().max(1.0) as u64,
            limit: self.burst as u64,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_burst_then_the_refill_rate_per_actor() {
        let limiter = RateLimiter::new(3, 2.0);
        for _ in 0..3 {
            assert!(limiter.take("a", 0).is_ok());
        }
        let refused = limiter.take("a", 0).unwrap_err();
        assert_eq!(
            refused,
            Refused {
                retry_after_s: 1,
                limit: 3
            }
        );
        assert!(
            limiter.take("b", 0).is_ok(),
            "another actor has its own bucket"
        );
        assert!(
            limiter.take("a", 500).is_ok(),
            "half a second refills one token"
        );
        assert!(limiter.take("a", 500).is_err());
        assert!(limiter.take("a", 60_000).is_ok());
    }
}
