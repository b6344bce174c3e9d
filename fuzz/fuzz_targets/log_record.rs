//! A log record's payload decoded as a `Mutation`: arbitrary bytes are an
//! error, never a panic or an allocation bomb; what decodes encodes back
//! to a record that decodes the same.
#![no_main]

use libfuzzer_sys::fuzz_target;
use natter::persist::{decode_mutation, encode_mutation};

fuzz_target!(|data: &[u8]| {
    if let Ok(mutation) = decode_mutation(1, data) {
        let again = decode_mutation(1, &encode_mutation(&mutation)).expect("re-encoded record");
        assert_eq!(again, mutation);
    }
});
