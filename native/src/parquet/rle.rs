//! Parquet's RLE / bit-packing hybrid, for definition and repetition levels and dictionary codes.

/// The RLE/bit-packed hybrid encoder, fed with runs `(value, count)` (adjacent equal runs merge).
pub(super) struct Rle {
    pub(super) out: Vec<u8>,
    width: u32,
    literals: Vec<u32>,
    pending: u32,
    pending_count: usize,
}

const MAX_LITERALS: usize = 63 * 8;

impl Rle {
    pub(super) fn new(width: u32) -> Self {
        Rle {
            out: Vec::new(),
            width,
            literals: Vec::new(),
            pending: 0,
            pending_count: 0,
        }
    }

    #[inline]
    pub(super) fn put(&mut self, value: u32, count: usize) {
        if count == 0 {
            return;
        }
        if self.pending_count > 0 && value == self.pending {
            self.pending_count += count;
        } else {
            self.flush_pending();
            self.pending = value;
            self.pending_count = count;
        }
    }

    pub(super) fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.out.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.out.push(v as u8);
    }

    fn flush_pending(&mut self) {
        let (value, mut count) = (self.pending, self.pending_count);
        self.pending_count = 0;
        if count == 0 {
            return;
        }
        if !self.literals.is_empty() {
            // complete the literal groups of 8 first
            let pad = (8 - self.literals.len() % 8) % 8;
            let take = pad.min(count);
            self.literals.extend(std::iter::repeat_n(value, take));
            count -= take;
            if self.literals.len() >= MAX_LITERALS
                && self.literals.len().is_multiple_of(8)
                && count < 8
            {
                self.flush_literals();
            }
            if count < 8 {
                self.push_literals(value, count);
                return;
            }
            self.flush_literals();
        }
        if count >= 8 {
            self.varint((count as u64) << 1);
            let bytes = self.width.div_ceil(8) as usize;
            self.out.extend_from_slice(&value.to_le_bytes()[..bytes]);
        } else {
            self.push_literals(value, count);
        }
    }

    /// Append `values` one by one, faster than `put` for values that rarely repeat side by side (the
    /// entries of a header set): they go to the bit-packed literals directly.
    pub(super) fn extend(&mut self, values: &[u32]) {
        if values.is_empty() {
            return;
        }
        self.flush_pending();
        if self.literals.is_empty() {
            // a first value that starts a long run still gets its RLE run
            let same = values
                .iter()
                .take_while(|&&value| value == values[0])
                .count();
            if same >= 8 {
                self.put(values[0], same);
                self.extend(&values[same..]);
                return;
            }
        }
        self.literals.extend_from_slice(values);
        if self.literals.len() >= MAX_LITERALS {
            // only whole groups of 8 may be flushed: padding is allowed at the very end only
            let keep = self.literals.len() % 8;
            let tail: Vec<u32> = self.literals[self.literals.len() - keep..].to_vec();
            self.literals.truncate(self.literals.len() - keep);
            self.flush_literals();
            self.literals.extend_from_slice(&tail);
        }
    }

    fn push_literals(&mut self, value: u32, count: usize) {
        for _ in 0..count {
            self.literals.push(value);
            // flush only whole groups of 8: padding is allowed at the very end only
            if self.literals.len() >= MAX_LITERALS && self.literals.len().is_multiple_of(8) {
                self.flush_literals();
            }
        }
    }

    fn flush_literals(&mut self) {
        if self.literals.is_empty() {
            return;
        }
        let groups = self.literals.len().div_ceil(8);
        self.literals.resize(groups * 8, 0);
        self.varint(((groups as u64) << 1) | 1);
        let width = self.width;
        let mut acc: u64 = 0;
        let mut bits: u32 = 0;
        for index in 0..self.literals.len() {
            acc |= (self.literals[index] as u64) << bits;
            bits += width;
            while bits >= 8 {
                self.out.push(acc as u8);
                acc >>= 8;
                bits -= 8;
            }
        }
        if bits > 0 {
            self.out.push(acc as u8);
        }
        self.literals.clear();
    }

    pub(super) fn finish(mut self) -> Vec<u8> {
        self.flush_pending();
        self.flush_literals();
        self.out
    }
}

pub(super) fn bit_width(max: u64) -> u32 {
    64 - max.leading_zeros()
}

/// Levels as a v1 page section: 4-byte length, then the hybrid encoding.
pub(super) fn levels_section(body: &mut Vec<u8>, levels: Rle) {
    let encoded = levels.finish();
    body.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    body.extend_from_slice(&encoded);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reference decoder of the hybrid encoding.
    fn decode(bytes: &[u8], width: u32, count: usize) -> Vec<u32> {
        let mut out = Vec::new();
        let mut at = 0;
        let varint = |at: &mut usize| {
            let (mut value, mut shift) = (0u64, 0);
            loop {
                let byte = bytes[*at];
                *at += 1;
                value |= u64::from(byte & 0x7f) << shift;
                if byte < 0x80 {
                    return value;
                }
                shift += 7;
            }
        };
        while out.len() < count {
            let header = varint(&mut at);
            if header & 1 == 0 {
                let n = (header >> 1) as usize;
                let size = width.div_ceil(8) as usize;
                let mut raw = [0u8; 4];
                raw[..size].copy_from_slice(&bytes[at..at + size]);
                at += size;
                out.extend(std::iter::repeat_n(u32::from_le_bytes(raw), n));
            } else {
                let n = (header >> 1) as usize * 8;
                let (mut acc, mut bits) = (0u64, 0u32);
                for _ in 0..n {
                    while bits < width {
                        acc |= u64::from(bytes[at]) << bits;
                        at += 1;
                        bits += 8;
                    }
                    out.push((acc & ((1u64 << width) - 1)) as u32);
                    acc >>= width;
                    bits -= width;
                }
            }
        }
        out.truncate(count);
        out
    }

    #[test]
    fn hybrid_round_trips() {
        let mut seed = 12345u64;
        for case in 0..400 {
            let width = 1 + case % 20;
            let mut rle = Rle::new(width);
            let mut expected = Vec::new();
            for _ in 0..(case * 7 % 300) {
                seed = seed
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let value = ((seed >> 33) as u32)
                    & ((1u32 << width) - 1)
                    & if case % 3 == 0 { 3 } else { u32::MAX };
                let count = match (seed >> 20) % 4 {
                    0 => 1,
                    1 => 3,
                    2 => 9,
                    _ => 600,
                } as usize;
                rle.put(value, count);
                expected.extend(std::iter::repeat_n(value, count));
            }
            let bytes = rle.finish();
            assert_eq!(
                decode(&bytes, width, expected.len()),
                expected,
                "case {case}"
            );
        }
    }
}
