package prefault

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// TestResident checks the point of Make: a large buffer's pages are in
// memory before it is written.
func TestResident(t *testing.T) {
	page := unix.Getpagesize()
	probe := make([]byte, 4*page)
	if err := unix.Madvise(probe[page:3*page], unix.MADV_POPULATE_WRITE); err != nil {
		t.Skipf("this kernel does not populate on advice (%v): Make faults pages as before", err)
	}
	const n = 16 << 20
	s := Make[byte](n)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(s)))
	start := (p + uintptr(page) - 1) &^ uintptr(page-1)
	end := (p + n) &^ uintptr(page-1)
	vec := make([]byte, (end-start)/uintptr(page))
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, start, end-start, uintptr(unsafe.Pointer(unsafe.SliceData(vec)))); errno != 0 {
		t.Fatal(errno)
	}
	missing := 0
	for _, v := range vec {
		if v&1 == 0 {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d pages not resident after Make", missing, len(vec))
	}
}
