//! Integration tests of the simulator, one binary with a module per behaviour.

mod autonuma;
mod autonuma2012;
mod calibration;
mod daemon;
mod determinism;
mod guest;
mod guest_frames;
mod harm;
mod hpc;
mod invariants;
mod mechanisms;
mod numad;
mod operators;
mod progress;
mod rhel;
mod stable;
mod static_placement;
mod tiering;
mod tiering_damos;
mod util;
