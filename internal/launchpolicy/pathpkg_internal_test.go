package launchpolicy

import "testing"

func TestPathSpec(t *testing.T) {
	for _, p := range []string{
		// The rule as given: a leading "/", "./", "../", "~", "." or "..",
		// or a backslash.
		"/bin/sh", "/usr/bin/bash", "./server.js", "../x", "~/bin/x", "~x", "~", ".", "..", `a\b`, `C:\x`,
		// npm-package-arg reads these as files or folders, and path.resolve
		// takes them out of node_modules/.bin.
		".hidden", "a/../b", "x/..", "node_modules/../../../bin/sh", "a/b/c", "@scope/a/b", "file:x", "FILE:/x",
		"file:../x", "git+file:///srv/repo", "pkg@file:../x", "c:x", "C:/x", "x.tgz", "x.tar", "x.TAR.GZ",
		"pkg@./x", "pkg@/x", "pkg@~/x", "@scope/pkg@../x", "pkg@x.tgz", "pkg@c:x",
		// uv: archives, and PEP 508 direct references to files.
		"x.whl", "dist/x-1.0-py3-none-any.whl", "x.zip", "pkg @ file:///srv/x",
		// Whitespace around a path does not hide it.
		" /bin/sh", "\t./x\n",
	} {
		if !pathSpec(p) {
			t.Errorf("pathSpec(%q) = false, want a path", p)
		}
	}
	for _, p := range []string{
		"", "pkg", "bash", "node", "server-bin", "@scope/pkg", "@scope/pkg@1.2.3", "pkg@1.2.3", "pkg@^1.2",
		"pkg@~1.2.3", "pkg@latest", "pkg@>=1 <2", "user/repo", "user/repo#main", "user/repo#feat/x",
		"user/repo#semver:^1", "github:user/repo", "gitlab:group/sub/repo", "https://example.com/x.tgz",
		"git+https://github.com/user/repo.git", "git+ssh://git@github.com/user/repo.git",
		"git@github.com:user/repo.git", "npm:pkg@1", "@scope/x.tgz", "mcp-server-fetch", "mcp-server-git==0.6",
		"pkg[extra]", "tool@latest", "-", "--yes",
	} {
		if pathSpec(p) {
			t.Errorf("pathSpec(%q) = true, want a package", p)
		}
	}
}

func TestPathArg(t *testing.T) {
	for _, tc := range []struct {
		command string
		args    []string
		want    bool
	}{
		{"npx", []string{"/bin/sh", "-c", "id"}, true},
		{"npx", []string{"--yes", "/bin/sh", "-c", "id"}, true},
		{"npx", []string{"-y", "--", "./server.js"}, true},
		{"npx", []string{"--registry", "https://r.example", "../x"}, true},
		{"npx", []string{"-p", "./local", "server-bin"}, true},
		{"npx", []string{"--package=/srv/pkg", "server-bin"}, true},
		{"npx", []string{"--package", "~/pkg", "server-bin"}, true},
		{"npx", []string{"-p", "@scope/pkg", "-p", "file:../x", "server-bin"}, true},
		{"npx", []string{"-p", "@scope/pkg", "/bin/sh", "-c", "id"}, true}, // the command under --package
		{"npx", []string{"--foo", "./x", "pkg"}, true},                     // npm reads ./x as the package
		{"NPX", []string{"./x"}, true},
		{"npx", []string{"-y", "@scope/pkg", "./config.json", "/data"}, false}, // the server's own arguments
		{"npx", []string{"-y", "@scope/pkg", "--root", "/srv"}, false},
		{"npx", []string{"-C", "/srv/prefix", "@scope/pkg"}, false},
		{"npx", []string{"--cache", "/tmp/cache", "-y", "pkg"}, false},
		{"npx", []string{"-p", "@scope/pkg", "server-bin", "/data"}, false},
		{"npx", []string{"-y", "user/repo"}, false},
		{"npx", []string{"--no-package", "x", "pkg"}, false},
		{"npx", nil, false},
		{"uvx", []string{"/usr/bin/python3", "-c", "x"}, true},
		{"uvx", []string{"--python", "3.12", "./tool"}, true},
		{"uvx", []string{"--from", "./local", "tool"}, true},
		{"uvx", []string{"--from=/srv/pkg", "tool"}, true},
		{"uvx", []string{"--with", "../x", "tool"}, true},
		{"uvx", []string{"-w", "x.whl", "tool"}, true},
		{"uvx", []string{"-w./x", "tool"}, true},
		{"uvx", []string{"--with-editable", "/srv/x", "tool"}, true},
		{"uvx", []string{"--from", "pkg @ file:///srv/x", "tool"}, true},
		{"uvx", []string{"--", "./tool"}, true},
		{"uvx", []string{"--from", "mcp-server-git", "mcp-server-git", "--repository", "/repo"}, false},
		{"uvx", []string{"--directory", "/srv", "mcp-server-time"}, false},
		{"uvx", []string{"--with", "httpx>=0.27", "tool"}, false},
		{"uvx", []string{"-c", "constraints.txt", "mcp-server-fetch"}, false},
		{"uvx", []string{"tool@latest", "./arg"}, false},
		{"node", []string{"./server.js"}, false}, // not a package launcher
		{"python", []string{"/srv/server.py"}, false},
	} {
		if got := pathArg(tc.command, tc.args); got != tc.want {
			t.Errorf("pathArg(%s %q) = %v, want %v", tc.command, tc.args, got, tc.want)
		}
	}
}
