//! Any bytes, as one to four record values: decoding must never panic, and the columns it returns
//! must form valid Arrow arrays (equal lengths, monotone offsets, UTF-8, indices in range, times and
//! flags that fit the landing columns). Run by `bench/fuzz_decoder.py --native`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte splits the input into record values (0 = no value), so batches mix records.
    let (split, rest) = match data.split_first() {
        Some((first, rest)) => (*first as usize, rest),
        None => (0, data),
    };
    let mut values: Vec<Option<&[u8]>> = Vec::new();
    if split % 7 == 6 {
        values.push(None);
    }
    let cut = if rest.is_empty() { 0 } else { split % (rest.len() + 1) };
    if split % 2 == 1 && cut > 0 {
        values.push(Some(&rest[..cut]));
        values.push(Some(&rest[cut..]));
    } else {
        values.push(Some(rest));
    }
    let columns = kip714_native::decode_values(&values);
    if let Err(problem) = columns.check_consistent() {
        panic!("inconsistent columns: {problem}");
    }
});
