# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the system tests read of an ELF program's header: its machine and
its word size, to tell a cross build's programs (an i386 build's, run on
x86-64) from the machine's own."""

EM_386 = 3
EM_X86_64 = 62


def _head(path):
    with open(path, "rb") as f:
        head = f.read(20)
    assert head[:4] == b"\x7fELF" and head[4] in (1, 2) and head[5] == 1, \
        f"{path} is not a little-endian ELF file of a known class"
    return head


def elf_machine(path):
    """The ELF machine number (e_machine) of the program @path (links followed)."""
    return int.from_bytes(_head(path)[18:20], "little")


def elf_word_size(path):
    """The word size of the program @path: 4 for ELFCLASS32, 8 for ELFCLASS64."""
    return 4 if _head(path)[4] == 1 else 8
