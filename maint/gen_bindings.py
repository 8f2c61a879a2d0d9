#!/usr/bin/env python3
"""gen_bindings.py: write the C entry points of nbrma's MPI surface from maint/rma_api.txt.

A table line with a binding,

    name  nbrma  file [check ...]: call

(every nbrma function has one) has its C function written into src/mpi/<file>_bindings.inc (src/<file>_bindings.inc
where file names a folder, as progress/interposed_waits does), which the .cpp of the
same name includes (same translation unit: the wrapper and the implementation it calls
compile together, as hand-written ones did). The function's prototype is the one MPICH's
mpi.h (MPI_ names) or include/nbrma.h (MPIX_ names) declares, parameter names included;
its body runs the checks, then returns `call`, an expression over those parameter names
in which NAME stands for the function's name as a string. An MPI_ function also gets its
PMPI_ twin (NBRMA_PMPI, src/mpich/pmpi.hpp). It also writes the prototype in the SYNOPSIS
of every section-3 man page source (maint/man/<function>.3.txt) of a function
include/nbrma.h declares, as the header declares it. Checks:

    request    the MPI_Request *request argument must not be null (NBRMA_REQUEST_POINTER,
               after the window: MPICH checks the window first)
    disp_unit  a large-count window creation's MPI_Aint disp_unit must fit an int
    site       NBRMA_CHECK=races: the caller's address is the call's site (NBRMA_CALL_SITE)
    proc_null=PARAM
               PARAM == MPI_PROC_NULL: the call does nothing but check the window
               (mpi::proc_null, src/mpi/bindings.hpp), handing back a complete request
               where it has a `request` parameter

A line `= text` after a function's line is its description: the generator writes it into
the NAME line of the function's man page source (every MPIX_ function with a page must
have one).

Usage: gen_bindings.py [--check] [--srcdir DIR]
  writes the .inc files and the synopses (or, with --check, compares them with what it would write and
  fails on any difference: part of `make check`). MPICH's prototypes are read from the
  preprocessed <mpi.h>: $MPICH_CFLAGS, else `pkg-config --cflags mpich`.
"""
import os
import re
import shlex
import subprocess
import sys

CHECKS = {
    "request": '    NBRMA_REQUEST_POINTER("{name}", win, request);\n',
    "site": '    NBRMA_CALL_SITE();\n',
    "disp_unit": '    if (disp_unit > INT32_MAX)\n'
                 '        return raise_comm("{name}", comm, Status::err_arg, "disp_unit too large");\n',
    "proc_null": '    if ({param} == MPI_PROC_NULL) return nbrma::mpi::proc_null("{name}", win, {request});\n',
}
WIDTH = 100


def fail(message):
    sys.stderr.write("gen_bindings: " + message + "\n")
    sys.exit(1)


def table(path):
    """The bindings of the table, (name, file, checks, call) in table order, and the
    descriptions: name -> the text of its `= ...` line."""
    rows, descriptions, last = [], {}, None
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            where = "rma_api.txt:%d: " % number
            if line.startswith("="):
                if last is None or last in descriptions:
                    fail(where + "a description that follows no function, or a second one")
                descriptions[last] = line[1:].strip()
                continue
            fields = line.split(None, 2)
            last = fields[0]
            if len(fields) == 2 and fields[1] == "nbrma":
                fail(where + fields[0] + ": an nbrma function without a binding")
            if len(fields) < 3:
                continue
            name, handler, binding = fields
            if handler != "nbrma":
                fail(where + name + ": only an nbrma function has a binding")
            if ":" not in binding:
                fail(where + name + ': expected "file [check ...]: call"')
            head, call = binding.split(":", 1)
            words = head.split()
            if not words:
                fail(where + name + ": no file")
            for check in words[1:]:
                if check.split("=")[0] not in CHECKS or ("=" in check) != (
                        check.startswith("proc_null")):
                    fail(where + name + ": unknown check " + check)
            rows.append((name, words[0], words[1:], call.strip()))
    return rows, descriptions


def prototypes(text):
    """name -> (return type, parameter list) of every `type NAME(params);` in text."""
    found = {}
    for match in re.finditer(r"\b(int|double)\s+((?:P?MPIX?|nbrma)_\w+)\s*\(([^)]*)\)", text):
        kind, name, params = match.groups()
        found.setdefault(name, (kind, " ".join(params.split())))
    return found


def mpich_text():
    flags = os.environ.get("MPICH_CFLAGS")
    if flags is None:
        try:
            flags = subprocess.run(["pkg-config", "--cflags", "mpich"], check=True,
                                   capture_output=True, text=True).stdout
        except (OSError, subprocess.CalledProcessError):
            fail("no MPICH_CFLAGS and `pkg-config --cflags mpich` failed")
    command = [os.environ.get("CC", "cc"), "-E", "-x", "c", "-"] + shlex.split(flags)
    run = subprocess.run(command, input="#include <mpi.h>\n", capture_output=True, text=True)
    if run.returncode != 0:
        fail("preprocessing <mpi.h> failed: " + run.stderr.strip())
    return run.stdout


def params_of(params):
    """The parameter names of a C parameter list ("void" and "" have none)."""
    if params in ("", "void"):
        return []
    names = []
    for param in params.split(","):
        match = re.search(r"(\w+)\s*(\[\s*\])?\s*$", param.strip())
        names.append(match.group(1))
    return names


def wrap(head, items, tail, indent):
    """head + items joined by ", " + tail, broken after commas to stay within WIDTH."""
    lines, line = [], head
    for i, item in enumerate(items):
        piece = item + (", " if i + 1 < len(items) else tail)
        if len(line) + len(piece.rstrip()) > WIDTH and line.strip():
            lines.append(line.rstrip())
            line = " " * indent
        line += piece
    if not items:
        line += tail
    lines.append(line)
    return "\n".join(lines)


def function(name, checks, call, prototype):
    kind, params = prototype
    head = "%s %s(" % (kind, name)
    signature = wrap(head, [p.strip() for p in params.split(",")] if params else [], ") {",
                     len(head))
    names = params_of(params)
    body = ""
    for check in checks:
        kind, _, param = check.partition("=")
        if param and param not in names:
            fail("%s: check %s names no parameter of %s" % (name, check, name))
        body += CHECKS[kind].format(name=name, param=param,
                                    request="request" if "request" in names else "nullptr")
    expression = call.replace("NAME", '"%s"' % name)
    # every lower-case name the call uses that is not a function, a template, a member
    # of a scope (Flavor::create) or a literal must be a parameter
    unknown = set(re.findall(r"(?<![:\w])([a-z_]\w*)\b(?!\s*[(<:])", expression)) - set(
        params_of(params)) - {"nullptr", "true", "false", "int"}
    if unknown:
        fail("%s: the call names %s, not a parameter of %s" % (name, ", ".join(sorted(unknown)),
                                                               name))
    match = re.match(r"(\w+)\((.*)\)$", expression)
    if match:
        fn, args = match.groups()
        items = [a.strip() for a in re.split(r",\s*(?![^()]*\))", args)]
        statement = wrap("    return %s(" % fn, items, ");", len("    return %s(" % fn))
    else:
        statement = "    return %s;" % expression
    return signature + "\n" + body + statement + "\n}\n"


def source_path(file):
    """A binding's file under src/: "name" is mpi/name, "folder/name" itself."""
    return file if "/" in file else "mpi/" + file


def render(file, rows, declared):
    out = ["// Generated by maint/gen_bindings.py from maint/rma_api.txt and the prototypes of",
           "// MPICH's <mpi.h> and include/nbrma.h: do not edit (change the table and run",
           "// `python3 maint/gen_bindings.py`). Included by src/%s.cpp." % source_path(file),
           "", 'extern "C" {', ""]
    for name, _, checks, call in rows:
        if name not in declared:
            fail("%s: no prototype in <mpi.h> or include/nbrma.h" % name)
        out.append(function(name, checks, call, declared[name]))
    out.append('}  // extern "C"')
    twins = sorted(name[len("MPI_"):] for name, _, _, _ in rows if name.startswith("MPI_"))
    if twins:
        out += ["", "// The profiling names (src/mpich/pmpi.hpp)."]
        out += ["NBRMA_PMPI(%s)" % twin for twin in twins]
    return "\n".join(out) + "\n"


def declarations(header):
    """name -> the declaration as include/nbrma.h writes it (lines kept, up to the ';')."""
    found = {}
    for match in re.finditer(r"^[a-z][a-z ]* \**((?:MPIX|nbrma)_\w+)\([^;]*\);", header,
                             re.MULTILINE):
        found[match.group(1)] = match.group(0)
    return found


def synopsis(path, name, declaration, description):
    """The man page source at `path` with its NAME line set to `description` and its
    SYNOPSIS prototype to `declaration`."""
    text = open(path).read()
    if description is not None:
        if not text.startswith("NAME "):
            fail("%s: no NAME line first" % path)
        text = "NAME %s - %s%s" % (name, description, text[text.index("\n"):])
    match = re.search(r"^SYNOPSIS\n(?:.*\n)*?(?=^[a-z][a-z ]* \**%s\()" % re.escape(name), text,
                      re.MULTILINE)
    end = text.find("\nDESCRIPTION\n")
    if not match or end < match.end():
        fail("%s: no SYNOPSIS with a prototype of %s before DESCRIPTION" % (path, name))
    return text[:match.end()] + declaration + text[end:]


def main():
    args = sys.argv[1:]
    check = "--check" in args
    srcdir = args[args.index("--srcdir") + 1] if "--srcdir" in args else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..")
    rows, descriptions = table(os.path.join(srcdir, "maint", "rma_api.txt"))
    declared = prototypes(mpich_text())
    with open(os.path.join(srcdir, "include", "nbrma.h")) as f:
        declared.update(prototypes(f.read()))
    files = {}
    for row in rows:
        files.setdefault(row[1], []).append(row)
    stale = []
    for file, file_rows in sorted(files.items()):
        path = os.path.join(srcdir, "src", source_path(file) + "_bindings.inc")
        text = render(file, file_rows, declared)
        old = open(path).read() if os.path.exists(path) else None
        if check:
            if old != text:
                stale.append(path)
        elif old != text:
            with open(path, "w") as f:
                f.write(text)
    with open(os.path.join(srcdir, "include", "nbrma.h")) as f:
        header = f.read()
    pages = 0
    for name, declaration in sorted(declarations(header).items()):
        path = os.path.join(srcdir, "maint", "man", name + ".3.txt")
        if not os.path.exists(path):
            continue  # maint/check_man.sh reports a missing page
        pages += 1
        if name.startswith("MPIX_") and name not in descriptions:
            fail("%s: a man page but no `= description` line in rma_api.txt" % name)
        old = open(path).read()
        text = synopsis(path, name, declaration, descriptions.get(name))
        if check and old != text:
            stale.append(path)
        elif not check and old != text:
            with open(path, "w") as f:
                f.write(text)
    count = len(rows)
    if stale:
        fail("stale (run `python3 maint/gen_bindings.py`): " + " ".join(stale))
    print("gen_bindings: %d functions in %d files, %d man page synopses, %d descriptions: %s" %
          (count, len(files), pages, len(descriptions), "ok" if check else "written"))


if __name__ == "__main__":
    main()
