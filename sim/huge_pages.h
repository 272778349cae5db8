#pragma once
// Transparent huge pages for the simulator's heap. A whole-wafer run keeps gigabytes of
// per-PE and per-router state and visits it in scattered order every cycle; on 4 KiB pages
// most of those visits also miss the TLB, and the first touch of each page is a fault. glibc
// backs malloc with huge pages only when GLIBC_TUNABLES asks for it when the process starts
// (glibc.malloc.hugetlb=1), so the executable starts itself again once with it set.

#include <string>

namespace wafersim::sim {

// Whether this build can ask malloc for huge pages: glibc on Linux, no sanitizer (whose
// allocator ignores glibc's tunables).
bool malloc_huge_pages_buildable();

// Replaces the process by the same program with `glibc.malloc.hugetlb=1` added to
// GLIBC_TUNABLES, when all of these hold: Linux with glibc; the kernel's transparent huge
// pages in `madvise` mode (with `always` malloc already gets them, with `never` nothing
// would); GLIBC_TUNABLES does not name the tunable already; WAFERSIM_HUGE_PAGES is not "0";
// not under Valgrind or a sanitizer. Otherwise, or when exec fails, returns and changes
// nothing. Call first in main(), before any thread or file exists.
void reexec_with_huge_pages(char* argv[]);

// How this process's heap is paged, for run.json: "always" (the kernel backs all anonymous
// memory with huge pages), "malloc" (malloc asks for them), or "none".
std::string heap_huge_pages();

}  // namespace wafersim::sim
