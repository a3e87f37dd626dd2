"""GoogleTest tests, linked with the GoogleTest of Debian's packages."""

load("@rules_cc//cc:defs.bzl", "cc_test")

# GoogleTest and its main() come from Debian's packages, not from a Bazel repository.
GTEST_LINKOPTS = [
    "-lgtest",
    "-lgtest_main",
    "-lpthread",
]

def gtest_test(name, linkopts = [], **kwargs):
    """A cc_test whose main is GoogleTest's; `linkopts` are added to GoogleTest's."""
    cc_test(
        name = name,
        linkopts = GTEST_LINKOPTS + linkopts,
        **kwargs
    )
