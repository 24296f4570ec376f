//! Per-actor rate limits for `serve --http`: at most `limit` requests per fixed window of
//! `window` for each token (the no-token loopback server counts as one actor), so one
//! client in a loop cannot starve the others. Every answer says where the caller stands
//! (`X-RateLimit-Limit`, `-Remaining`, `-Reset` in seconds until the window ends); a
//! request over the limit gets 429 with `Retry-After`.
//!
//! A fixed window is the simplest scheme whose headers mean something exact; it allows a
//! burst of up to twice the limit across a window boundary, which is fine for fairness.
//! Time is a parameter, so the tests need no clock.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Where an actor stands after a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Standing {
    pub allowed: bool,
    pub limit: u32,
    pub remaining: u32,
    /// Whole seconds until the window ends (at least 1).
    pub(crate) reset_sec: u64,
}

pub(crate) struct RateLimiter {
    limit: u32,
    window: Duration,
    windows: Mutex<HashMap<String, Window>>,
}

struct Window {
    started: Instant,
    used: u32,
}

impl RateLimiter {
    pub(crate) fn new(limit: u32, window: Duration) -> RateLimiter {
        RateLimiter {
            limit,
            window,
            windows: Mutex::default(),
        }
    }

    /// Counts one request of `actor` at `now`, unless it is over the limit.
    pub(crate) fn admit(&self, actor: &str, now: Instant) -> Standing {
        let mut windows = self.windows.lock().unwrap_or_else(PoisonError::into_inner);
        // Forget the windows that are over, so the map holds only active actors.
        windows.retain(|_, window| now.duration_since(window.started) < self.window);
        let window = windows.entry(actor.to_owned()).or_insert(Window {
            started: now,
            used: 0,
        });
        let allowed = window.used < self.limit;
        if allowed {
            window.used += 1;
        }
        let left = self
            .window
            .saturating_sub(now.duration_since(window.started));
        Standing {
            allowed,
            limit: self.limit,
            remaining: self.limit - window.used,
            reset_sec: left.as_secs_f64().ceil().max(1.0) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_per_actor_and_resets_with_the_window() {
        let limiter = RateLimiter::new(2, Duration::from_secs(60));
        let start = Instant::now();
        let first = limiter.admit("alice", start);
        assert_eq!(
            (first.allowed, first.remaining, first.reset_sec),
            (true, 1, 60)
        );
        assert!(limiter.admit("alice", start).allowed);
        let over = limiter.admit("alice", start + Duration::from_secs(15));
        assert_eq!(
            (over.allowed, over.remaining, over.reset_sec),
            (false, 0, 45)
        );
        assert!(
            limiter.admit("bob", start).allowed,
            "bob has his own window"
        );
        let later = limiter.admit("alice", start + Duration::from_secs(60));
        assert_eq!((later.allowed, later.remaining), (true, 1));
    }

    #[test]
    fn reset_is_at_least_one_second() {
        let limiter = RateLimiter::new(1, Duration::from_millis(1500));
        let start = Instant::now();
        limiter.admit("a", start);
        let standing = limiter.admit("a", start + Duration::from_millis(1400));
        assert_eq!((standing.allowed, standing.reset_sec), (false, 1));
    }
}
