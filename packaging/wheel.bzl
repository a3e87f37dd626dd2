"""vramshim_wheel: the wheel, written into a directory (a wheelhouse) under the name PEP 427 gives it,
vramshim-VERSION-py3-none-manylinux_2_36_x86_64.whl, VERSION read from the file at build time."""

def _vramshim_wheel_impl(ctx):
    wheelhouse = ctx.actions.declare_directory(ctx.attr.name)
    args = ctx.actions.args()
    args.add(ctx.file._builder)
    args.add(wheelhouse.path)
    args.add("--version-file", ctx.file.version)
    args.add("--native", ctx.file.native)
    args.add("--readme", ctx.file.readme)
    args.add("--license", ctx.file.license)
    for source in ctx.files.package:
        args.add("--package", source.path[len(ctx.attr.package_root) + 1:] + "=" + source.path)
    for target, name in ctx.attr.data.items():
        args.add("--data", name + "=" + target.files.to_list()[0].path)
    inputs = [ctx.file._builder, ctx.file.version, ctx.file.native, ctx.file.readme, ctx.file.license]
    inputs += ctx.files.package + ctx.files.data
    ctx.actions.run(
        executable = "/usr/bin/python3",
        arguments = [args],
        inputs = inputs,
        outputs = [wheelhouse],
        mnemonic = "VramshimWheel",
        progress_message = "Writing the vramshim wheel",
    )
    return [DefaultInfo(files = depset([wheelhouse]), runfiles = ctx.runfiles(files = [wheelhouse]))]

vramshim_wheel = rule(
    implementation = _vramshim_wheel_impl,
    attrs = {
        "version": attr.label(allow_single_file = True, mandatory = True),
        "native": attr.label(allow_single_file = True, mandatory = True),
        "readme": attr.label(allow_single_file = True, mandatory = True),
        "license": attr.label(allow_single_file = True, mandatory = True),
        # The Python package's files, named in the wheel by their path under package_root.
        "package": attr.label_list(allow_files = [".py"]),
        "package_root": attr.string(mandatory = True),
        # Data files installed under the prefix: target -> path under it (share/man/man1/...).
        "data": attr.label_keyed_string_dict(allow_files = True),
        "_builder": attr.label(default = "build_wheel.py", allow_single_file = True),
    },
)
