//! Compact vectors: one signed byte a dimension and one scale a vector.
//!
//! A section vector of multilingual-e5-small is 384 `f32` (1.5 kB); stored as `i8` it is
//! 388 bytes, so the vectors of a few hundred thousand sections stay a small share of the
//! memory the manuals themselves take. Vectors are L2-normalised before quantisation, so a
//! score is the cosine whatever the provider returns, and the query is quantised the same
//! way, which makes a score an integer dot product (the loop the compiler vectorises
//! best). Quantisation moves a cosine by well under 0.01 (`tests`), far below the gaps
//! between a relevant section and the rest.
//!
//! [`Arena`] holds the vectors by key id in fixed chunks shared with readers: the worker
//! that adds vectors copies only a chunk a reader still holds, so publishing a new state
//! never copies the whole arena.

use std::sync::Arc;

/// Vectors a chunk (at 384 dimensions, 384 kB a chunk).
const CHUNK: usize = 1024;

/// A normalised, quantised vector.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Quantized {
    pub scale: f32,
    pub values: Vec<i8>,
}

impl Quantized {
    /// `vector` normalised to length 1 and quantised; a zero vector stays zero (with a
    /// positive scale, so it still counts as present).
    pub(crate) fn new(vector: &[f32]) -> Quantized {
        let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        let peak = vector.iter().fold(0f32, |peak, v| peak.max(v.abs()));
        if norm == 0.0 || peak == 0.0 {
            return Quantized {
                scale: f32::MIN_POSITIVE,
                values: vec![0; vector.len()],
            };
        }
        let scale = peak / norm / 127.0;
        let values = vector
            .iter()
            .map(|v| (v / norm / scale).round().clamp(-127.0, 127.0) as i8)
            .collect();
        Quantized { scale, values }
    }

    pub(crate) fn dims(&self) -> usize {
        self.values.len()
    }

    /// The stored form, as the memory domain keeps claim vectors: the scale
    /// (little-endian `f32`), then one byte a dimension.
    pub(crate) fn to_blob(&self) -> Vec<u8> {
        let mut blob = self.scale.to_le_bytes().to_vec();
        blob.extend(self.values.iter().map(|v| *v as u8));
        blob
    }

    /// The stored form read back; `None` for a blob without a finite scale or without
    /// values. A scale of 0 (how the memory domain stored a zero vector before it used
    /// this type) reads as a present zero vector, like [`Self::new`] makes one.
    pub(crate) fn from_blob(blob: &[u8]) -> Option<Quantized> {
        let (scale, values) = blob.split_first_chunk::<4>()?;
        let scale = f32::from_le_bytes(*scale);
        if values.is_empty() || !scale.is_finite() || scale < 0.0 {
            return None;
        }
        Some(Quantized {
            scale: if scale == 0.0 {
                f32::MIN_POSITIVE
            } else {
                scale
            },
            values: values.iter().map(|v| *v as i8).collect(),
        })
    }

    /// Cosine with a vector of the same length given as its parts.
    pub(crate) fn cosine(&self, scale: f32, values: &[i8]) -> f32 {
        dot(&self.values, values) as f32 * self.scale * scale
    }
}

/// Lanes of the dot product: products of two `i8` fit an `i16`, and sixteen independent
/// sums are the shape the compiler turns into SIMD multiply-adds (twice as fast as a
/// plain iterator sum on x86-64 baseline).
const LANES: usize = 16;

/// Integer dot product; 384 products of at most 127² fit an `i32` many times over.
fn dot(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; LANES];
    let (a_body, b_body) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: i32 = a_body
        .remainder()
        .iter()
        .zip(b_body.remainder())
        .map(|(&x, &y)| i32::from(x) * i32::from(y))
        .sum();
    for (x, y) in a_body.zip(b_body) {
        for lane in 0..LANES {
            lanes[lane] += i32::from(i16::from(x[lane]) * i16::from(y[lane]));
        }
    }
    lanes.iter().sum::<i32>() + tail
}

/// Vectors by key id (dense ids from 0), some of them missing.
#[derive(Debug, Clone)]
pub(crate) struct Arena {
    dims: usize,
    chunks: Vec<Arc<Chunk>>,
}

#[derive(Debug, Clone)]
struct Chunk {
    values: Vec<i8>,
    /// 0.0 marks a missing vector.
    scales: Vec<f32>,
}

impl Arena {
    pub(crate) fn new(dims: usize) -> Arena {
        Arena {
            dims,
            chunks: Vec::new(),
        }
    }

    pub(crate) fn dims(&self) -> usize {
        self.dims
    }

    /// Stores the vector of `id`; its length must be [`Self::dims`].
    pub(crate) fn set(&mut self, id: u32, vector: &Quantized) {
        assert_eq!(vector.dims(), self.dims, "vector length");
        let (chunk, slot) = (id as usize / CHUNK, id as usize % CHUNK);
        while self.chunks.len() <= chunk {
            self.chunks.push(Arc::new(Chunk {
                values: vec![0; CHUNK * self.dims],
                scales: vec![0.0; CHUNK],
            }));
        }
        let chunk = Arc::make_mut(&mut self.chunks[chunk]);
        chunk.values[slot * self.dims..(slot + 1) * self.dims].copy_from_slice(&vector.values);
        chunk.scales[slot] = vector.scale;
    }

    /// The scale and values of `id`, if it has a vector.
    pub(crate) fn get(&self, id: u32) -> Option<(f32, &[i8])> {
        let chunk = self.chunks.get(id as usize / CHUNK)?;
        let slot = id as usize % CHUNK;
        let scale = chunk.scales[slot];
        (scale > 0.0).then(|| {
            (
                scale,
                &chunk.values[slot * self.dims..(slot + 1) * self.dims],
            )
        })
    }

    pub(crate) fn has(&self, id: u32) -> bool {
        self.get(id).is_some()
    }

    /// The cosine of `query` with `id`'s vector, if it has one and the lengths agree.
    pub(crate) fn cosine(&self, query: &Quantized, id: u32) -> Option<f32> {
        if query.dims() != self.dims {
            return None;
        }
        self.get(id)
            .map(|(scale, values)| query.cosine(scale, values))
    }

    /// Bytes the vectors take in memory (allocated chunks).
    pub(crate) fn bytes(&self) -> usize {
        self.chunks.len() * CHUNK * self.bytes_per_vector()
    }

    pub(crate) fn bytes_per_vector(&self) -> usize {
        self.dims + std::mem::size_of::<f32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic pseudo-random unit-ish vectors (no `rand` dependency).
    fn vector(seed: u64, dims: usize) -> Vec<f32> {
        let mut state = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..dims)
            .map(|_| {
                state = state
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
            })
            .collect()
    }

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / norm(a) / norm(b)
    }

    #[test]
    fn quantised_cosine_is_close_to_the_exact_one() {
        let query = vector(1, 384);
        let q = Quantized::new(&query);
        for seed in 2..200 {
            // Mix in the query so cosines spread over a range, as real scores do.
            let mut other = vector(seed, 384);
            let weight = (seed % 10) as f32 / 10.0;
            for (o, x) in other.iter_mut().zip(&query) {
                *o = *o * (1.0 - weight) + x * weight;
            }
            let p = Quantized::new(&other);
            let error = (q.cosine(p.scale, &p.values) - cosine(&query, &other)).abs();
            assert!(error < 0.005, "seed {seed}: error {error}");
        }
    }

    #[test]
    fn blobs_round_trip_and_read_the_memory_domains_earlier_vectors() {
        let vector = vector(7, 384);
        let quantized = Quantized::new(&vector);
        let blob = quantized.to_blob();
        assert_eq!(blob.len(), 4 + 384);
        assert_eq!(Quantized::from_blob(&blob), Some(quantized.clone()));
        // The memory domain's own format before: the vector normalised, then scaled so its
        // largest component is 127, the same bytes.
        let norm = vector.iter().map(|v| v * v).sum::<f32>().sqrt();
        let unit: Vec<f32> = vector.iter().map(|v| v / norm).collect();
        let largest = unit.iter().fold(0f32, |m, x| m.max(x.abs()));
        let mut earlier = (largest / 127.0).to_le_bytes().to_vec();
        earlier.extend(
            unit.iter()
                .map(|x| (x / (largest / 127.0)).round() as i8 as u8),
        );
        let read = Quantized::from_blob(&earlier).unwrap();
        let same = read.cosine(quantized.scale, &quantized.values);
        assert!((same - 1.0).abs() < 0.001, "{same}");
        let zero = Quantized::from_blob(&[0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(zero, Quantized::new(&[0.0, 0.0]));
        assert_eq!(Quantized::from_blob(&[1, 2]), None);
        assert_eq!(Quantized::from_blob(&1f32.to_le_bytes()), None);
    }

    #[test]
    fn dot_counts_every_dimension() {
        for dims in [1, 15, 16, 17, 384] {
            let a: Vec<i8> = (0..dims).map(|i| (i * 37 % 255 - 127) as i8).collect();
            let b: Vec<i8> = (0..dims).map(|i| (127 - i * 7 % 255) as i8).collect();
            let plain: i32 = a
                .iter()
                .zip(&b)
                .map(|(&x, &y)| i32::from(x) * i32::from(y))
                .sum();
            assert_eq!(dot(&a, &b), plain, "{dims} dimensions");
        }
    }

    #[test]
    fn arena_keeps_vectors_by_id_and_shares_chunks_with_readers() {
        let mut arena = Arena::new(4);
        let first = Quantized::new(&[1.0, 0.0, 0.0, 0.0]);
        arena.set(3, &first);
        arena.set(CHUNK as u32 + 1, &Quantized::new(&[0.0, 1.0, 0.0, 0.0]));
        let reader = arena.clone();
        arena.set(3, &Quantized::new(&[0.0, 0.0, 1.0, 0.0]));
        assert!(arena.has(3) && !arena.has(2) && !arena.has(99_999));
        let query = Quantized::new(&[1.0, 0.0, 0.0, 0.0]);
        assert!((reader.cosine(&query, 3).unwrap() - 1.0).abs() < 0.01);
        assert!(arena.cosine(&query, 3).unwrap().abs() < 0.01);
        assert_eq!(arena.cosine(&Quantized::new(&[1.0]), 3), None);
        assert_eq!(Quantized::new(&[0.0, 0.0]).scale, f32::MIN_POSITIVE);
    }
}
