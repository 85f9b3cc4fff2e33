/* Prints the offsets interpose/src/py/layout.rs assumes for CPython 3.11,
 * as this interpreter's headers define them (the unit test
 * `layout_matches_the_installed_headers` compiles and runs it). Build:
 *   cc $(python3.11-config --includes) layout_check.c
 */
#define Py_BUILD_CORE 1
#include <Python.h>
#include <stdio.h>
#include <stddef.h>
#include <string.h>
#include "internal/pycore_frame.h"
#define P(name, v) printf("%s %ld\n", name, (long)(v))
static unsigned state_bits(void (*set)(PyASCIIObject *)) {
    PyASCIIObject o; unsigned u; memset(&o, 0, sizeof o); set(&o);
    memcpy(&u, (char *)&o + offsetof(PyASCIIObject, state), sizeof u); return u;
}
static void set_kind(PyASCIIObject *o) { o->state.kind = 7; }
static void set_compact(PyASCIIObject *o) { o->state.compact = 1; }
static void set_ascii(PyASCIIObject *o) { o->state.ascii = 1; }
int main(void) {
    P("ts_cframe", offsetof(PyThreadState, cframe));
    P("cframe_current_frame", offsetof(_PyCFrame, current_frame));
    P("frame_code", offsetof(_PyInterpreterFrame, f_code));
    P("frame_previous", offsetof(_PyInterpreterFrame, previous));
    P("frame_prev_instr", offsetof(_PyInterpreterFrame, prev_instr));
    P("frame_owner", offsetof(_PyInterpreterFrame, owner));
    P("owner_generator", FRAME_OWNED_BY_GENERATOR);
    P("ob_type", offsetof(PyObject, ob_type));
    P("ob_size", offsetof(PyVarObject, ob_size));
    P("code_firstlineno", offsetof(PyCodeObject, co_firstlineno));
    P("code_filename", offsetof(PyCodeObject, co_filename));
    P("code_qualname", offsetof(PyCodeObject, co_qualname));
    P("code_linetable", offsetof(PyCodeObject, co_linetable));
    P("code_firsttraceable", offsetof(PyCodeObject, _co_firsttraceable));
    P("code_adaptive", offsetof(PyCodeObject, co_code_adaptive));
    P("code_unit", sizeof(_Py_CODEUNIT));
    P("bytes_sval", offsetof(PyBytesObject, ob_sval));
    P("str_length", offsetof(PyASCIIObject, length));
    P("str_state", offsetof(PyASCIIObject, state));
    P("ascii_data", sizeof(PyASCIIObject));
    P("compact_data", sizeof(PyCompactUnicodeObject));
    P("legacy_data", offsetof(PyUnicodeObject, data));
    P("state_kind_mask", state_bits(set_kind));
    P("state_compact_mask", state_bits(set_compact));
    P("state_ascii_mask", state_bits(set_ascii));
    return 0;
}
