// Package netns owns a home's network: it gives a sandbox's network
// namespace, made by bubblewrap with --unshare-all and without
// --share-net, outbound connections through slirp4netns and nothing of the
// host's loopback, and it reaches into that namespace from the host
// (Net.Dial, an HTTP proxy for the browser taking screenshots).
//
// Why slirp4netns and not pasta: slirp4netns 1.2.0 forwards no port in
// either direction unless asked through its API socket, which we do not
// open, and --disable-host-loopback makes its gateway (10.0.2.2) refuse
// what it would otherwise hand to the host's 127.0.0.1. The namespace gets
// a private address (10.0.2.100), a default route and a DNS forwarder
// (10.0.2.3); its own 127.0.0.1 is its own loopback. Debian's pasta
// (2023-03-09) defaults to -t auto, -u auto, -T auto and -U auto in pasta
// mode: ports bound on either side appear on the other, the host's
// loopback servers inside the namespace and the person's servers on the
// host, so every one of those would have to be turned off by flag, and its
// gateway maps to the host unless --no-map-gw. Fewer flags to get wrong.
//
// slirp4netns runs with --enable-sandbox and --enable-seccomp (it parses
// every packet the namespace sends) and with an exit pipe: it ends when
// Close closes the pipe or when this process dies, whichever comes first.
//
// The host's loopback addresses a home must still reach (the model API
// behind a loopback gateway, the screenshot endpoint) are Options.Forward:
// a listener opened inside the namespace on the same address, whose
// connections this package carries to the host's address. The host's
// other addresses (its LAN address, docker0, a VPN's, link-local ones)
// slirp4netns would reach as any other machine's; Options.RefuseHost puts
// a prohibit route for each in the namespace, for those the host has at
// Attach and, watched by netlink, for those it takes later (hostwatch.go).
//
// Entering the namespace (setns on a locked OS thread, then back) needs
// CAP_SYS_ADMIN: Probe says whether this process has it.
package netns
