package prefault

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// populate asks the kernel to make [p, p+size) resident, rounded inward
// to whole pages, since the pages at either end may hold other objects.
// It is advice: a kernel without MADV_POPULATE_WRITE (before 5.14) or a
// sandbox that refuses it leaves the pages to be faulted as they are
// written, so its error is dropped.
func populate(p unsafe.Pointer, size uintptr) {
	page := uintptr(unix.Getpagesize())
	start := (uintptr(p) + page - 1) &^ (page - 1)
	end := (uintptr(p) + size) &^ (page - 1)
	if end <= start {
		return
	}
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, start-uintptr(p))), end-start), unix.MADV_POPULATE_WRITE)
}
