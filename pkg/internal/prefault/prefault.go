// Package prefault makes large buffers resident in one system call
// instead of one page fault a page as they are first written.
//
// A build writes every byte of its index; where a page fault is costly
// (virtual machines whose faults exit to the hypervisor, as on the
// machines issue 29 was measured on), faulting 600 MiB of vectors a
// 4 KiB page at a time took about twice as long as asking the kernel to
// populate them at once (MADV_POPULATE_WRITE, Linux 5.14). The memory
// made resident is the memory about to be written, so the resident set
// is what it would have been once the buffer is filled.
package prefault

import "unsafe"

// minBytes is the smallest buffer worth a system call: below it a
// buffer's pages are few, and a small allocation shares its pages with
// other objects that may already have touched them.
const minBytes = 256 << 10

// Make is make([]T, n) for a buffer the caller is about to write whole,
// made resident at once when it is large: vector values, row offsets, a
// hash table's slots.
func Make[T any](n int) []T {
	s := make([]T, n)
	if size := uintptr(n) * unsafe.Sizeof(*new(T)); size >= minBytes {
		populate(unsafe.Pointer(unsafe.SliceData(s)), size)
	}
	return s
}
