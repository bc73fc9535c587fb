//! The `numabal` binary: everything is in the library (`lib.rs`).

fn main() -> std::process::ExitCode {
    numabal_cli::main()
}
