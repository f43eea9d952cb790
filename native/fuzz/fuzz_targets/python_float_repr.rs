//! Any f64: the attribute text the native decoder writes must parse back to the same number (Python
//! then compares it with `repr` in tests/unit/test_otlp_native.py).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|bits: u64| {
    let number = f64::from_bits(bits);
    let text = kip714_native::python_float_repr(number);
    if number.is_nan() {
        assert_eq!(text, "nan");
        return;
    }
    let parsed: f64 = text.parse().unwrap_or_else(|_| panic!("{text:?} does not parse"));
    assert_eq!(parsed.to_bits(), number.to_bits(), "{number:e} written as {text}");
});
