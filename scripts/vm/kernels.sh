# The guest kernels, sourced by setup.sh, run.sh and daemon-tests.sh (docs/vm-tests.md).
# Each is the kernel a Debian suite's linux-image-amd64 depends on, resolved when setup.sh
# runs: bookworm's 6.1 (the default, from the host's own package lists), trixie's 6.12 and
# sid's 7.2 (from package lists of their own under target/vm/apt/SUITE/, never the host's
# apt configuration).
KERNEL_NAMES="6.1 (bookworm, the default), 6.12 (trixie), 7.2 (sid)"

# The Debian suite of a --kernel value (a version or a suite name), or nothing.
kernel_suite() {
  case $1 in
    6.1|bookworm) echo bookworm ;;
    6.12|trixie) echo trixie ;;
    7.2|sid) echo sid ;;
  esac
}

# What file names of a kernel's runs carry: nothing for the default, "-SUITE" otherwise.
kernel_tag() { [ "$1" = bookworm ] || printf -- '-%s' "$1"; }

# The Linux release of a suite's kernel, MAJOR.MINOR (the simulator's policy.kernel).
kernel_version() {
  case $1 in
    bookworm) echo 6.1 ;;
    trixie) echo 6.12 ;;
    sid) echo 7.2 ;;
  esac
}
