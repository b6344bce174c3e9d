#![cfg(unix)]

pub mod net;
