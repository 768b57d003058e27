package sandbox

import (
	"testing"
)

func TestLookupUser(t *testing.T) {
	tests := []struct {
		name    string
		wantNil bool
		wantErr bool
	}{
		{"", true, false},
		{"no-such-user-textslash", true, true},
		{"root", false, false},
	}
	for _, tt := range tests {
		u, err := LookupUser(tt.name)
		if (err != nil) != tt.wantErr || (u == nil) != tt.wantNil {
			t.Errorf("LookupUser(%q): got %+v, %v; want nil %v, error %v", tt.name, u, err, tt.wantNil, tt.wantErr)
		}
	}
	if u, err := LookupUser("root"); err == nil && (u.UID != 0 || u.GID != 0 || u.Name != "root") {
		t.Errorf("LookupUser(root): got %+v; want uid 0 gid 0", u)
	}
}
