#!/usr/bin/env python3
"""NAT lab (issue 38): `huddle` sessions across emulated NATs in Linux network namespaces, measured cell by cell.

Usage (as root, with ip, nft, conntrack, ss, coturn's turnserver and miniupnpd installed; docs/NAT-LAB.md has the
results):
    python3 scripts/nat_lab.py [--huddle .build/release/huddle] [--cells PATTERN[,PATTERN...]] [--sizes 2,4]
                               [--timeout 40]
                               [--json-out PATH] [--run-dir DIR] [--keep-logs] [--no-nat-check]
                               [--member-relays-only]
    diagnosis only: [--no-default-routes] [--joiners-get-turn] [--coturn-verbose] [--coturn-arg=--OPTION]...
                    [--huddle-arg=--OPTION]...

Topology of a cell (rebuilt from nothing for every cell, then deleted):
  public   namespace with bridge br0, 10.99.0.0/24, and 10.99.0.254 on br0: the "internet core", default gateway of
           the relay, coturn and every router, with a blackhole default route behind it (a datagram to an address
           nobody routes, such as a peer's private address, is dropped silently, as upstream it would be;
           --no-default-routes leaves this out, as NATTraversalTests does)
  relay    10.99.0.1: `huddle relay --json --listen 10.99.0.1:3478`
  turn     10.99.0.2: coturn on port 443, UDP and TCP (user ada:secret, realm huddle.test)
  per member i (0-3): a router whose wan is 10.99.0.(11+i) on the bridge and whose lan is 192.168.(11+i).1/24, and
  a home namespace at 192.168.(11+i).2 (default route via the router) where the member runs on port 7000.
  cgnat puts a carrier router between: home router wan 100.64.(11+i).2 -> carrier lan 100.64.(11+i).1, carrier wan
  10.99.0.(11+i). hairpin puts every member on one lan bridge (192.168.11.2-5) behind one port-restricted router.
  A router that runs miniupnpd (the +upnp kinds) has its wan at 198.20.0.(11+i) instead: miniupnpd maps nothing
  from a private or reserved wan address, 10/8 included. Its cells put 198.20.0.254/24 on br0 too (ICMP redirects
  off), the default gateway of those routers; the core routes between the two networks. Nothing else moves.
  ipv6 cells have no IPv4 at all: every address is in 2001:db8::/32 and added with nodad; the bridge's core is
  2001:db8:99::254/64 (a route to each home prefix via its router, a blackhole default route), the relay listens on
  [2001:db8:99::1]:3478, home i is 2001:db8:(11+i)::2/64 behind a router whose wan is 2001:db8:99::(11+i)/64 and
  whose lan is 2001:db8:(11+i)::1/64; members listen on [2001:db8:(11+i)::2]:7000. No coturn in these cells.

NAT kinds (nftables in the router; every router drops new inbound on its wan in the input hook, so an unsolicited
packet to a port without a mapping is dropped, and conntrack makes replies address-and-port dependent):
  full-cone        snat udp 192.168.x.2:7000 to WAN:7000; dnat every inbound udp dport 7000 to the home host
  restricted       masquerade (port kept); an nft set of every IP the home sent to (forward hook); inbound udp
                   dport 7000 from an IP in the set is dnat-ed to the home host, any source port
  port-restricted  masquerade (port kept) + the wan drop (the reference topology's cone)
  symmetric        masquerade random,fully-random + the wan drop
  cgnat            two port-restricted routers in series (both keep ports when free)
  udp-blocked      port-restricted router; the home namespace drops all outbound UDP (TCP passes)
  symmetric+upnp   symmetric, and miniupnpd (Debian's, nftables backend) serving PCP, NAT-PMP and UPnP-IGD on lan,
                   its rules in a table inet miniupnpd, configured as Tests/HuddleCLITestSupport/MiniUPnPd.swift does
  port-restricted+upnp  port-restricted, and miniupnpd the same way
  ipv6             no NAT: a global IPv6 address; the router's only rule is the stateful firewall of IPv6 home
                   routers, `iifname "wan" ct state new counter drop` in its forward hook (table inet natlab)
Before the cells, a check without huddle (skip it with --no-nat-check) sends plain UDP from a home of each kind to
two servers and reports the mapping (same public port for both or not) and the filtering (what comes back from the
same IP on another port, and from an IP the home never sent to), and whether the hairpin router hairpins; for the
+upnp kinds the cells use, the home then asks for a NAT-PMP mapping of port 7000 and an address it never sent to
sends a datagram to the mapped address; for ipv6 (when its cells are selected), the same probes over IPv6 (servers
2001:db8:99::1 and ::2, ::3 the address never sent to).

Cells: every unordered pair of kinds (21), named SIDE_A+SIDE_B/N where side A holds the host; N=2: the host on side
A, one joiner on side B; N=4: the host and one joiner on side A, two joiners on side B, each member in its own home
behind its own router of its side's kind. Plus hairpin/2 and hairpin/4: every member behind one port-restricted
router. Plus the cells of the +upnp kinds (UPNP_CELLS, 5 pairs for each N), with the +upnp kind on side A:
symmetric+upnp with symmetric+upnp, symmetric, port-restricted and udp-blocked, and port-restricted+upnp with
symmetric. Plus ipv6/2 and ipv6/4, every member in an IPv6-only home of its own. The host gets --relay, --turn over
UDP and over TCP, and --share-turn (in the ipv6 cells only --relay [2001:db8:99::1]:3478); joiners get only the ticket.
Joiners start one after another, each once the previous one printed `joined` (or failed: the later ones are not
started). Every member asks its router for a port mapping (huddle's default); only the +upnp routers answer.

Measured per cell:
  connected      every member printed `joined` and every member printed a `message` from every other member
                 within 30 s of the host's start (each member sends a line once its roster names all others; the
                 last joiner also sends one right after its `joined`)
  join s         from starting the last joiner to its `joined`
  first msg s    from the last joiner's line, written right after its `joined`, to the host's `message` for it
  path at end    `/peers` at every member about 6 s after the last join; a pair is direct when both ends say direct,
                 relayed when both say relayed, split when they differ, not established when either end lists no
                 connection or one with packets_sent 0 (huddle lists a connection whose handshake never completed,
                 as "direct" at the peer's first address); an end that says direct at a TURN relayed address (coturn,
                 a port other than 443: the peer's allocation) counts as relayed, with a note
  time to direct per pair, from the later of the two `joined` events to the moment both ends had seen the other
                 direct (the first `path-changed` to direct, or the first `/peers` answer showing an established
                 direct connection: `/peers` is asked every 100 ms); the cell's median over the pairs that went
                 direct, "-" when none did
  port mapping   each member's last `port-mapping` event: protocol and external address, or the error
Prints a markdown table and a summary; --json-out writes every measurement, event times and notes. Each member's
timestamped output, coturn's log, miniupnpd's configuration and log (miniupnpd-rI/), every router's conntrack table
and ruleset, and a merged timeline stay in --run-dir (removed unless --keep-logs or a cell failed to connect).

Cleanup: every namespace is named natlab-*; the script deletes leftovers of that prefix at start (killing the
processes still inside them, which an earlier run of this script started) and its own namespaces at the end of
each cell, also on errors and on SIGINT/SIGTERM. Processes are stopped by their pid only. A cell's processes run at
most --timeout seconds from the host's start (plus up to 5 s to exit).
--member-relays-only (members relaying for members, PROTOCOL section 10.3): no `huddle relay` and no coturn run, and
no member gets --relay, --turn or --share-turn, so the only relays are members. Without a relay or STUN server a
member knows no public address of its own, so a ticket can only be used when the host's router admits unsolicited
datagrams at an address the host advertises; in this mode the host is therefore the first member (a0, a1, b0, b1
order) whose kind is full-cone (started with --advertise ROUTER_WAN:7000 --advertise HOME_IP:7000: the static
forward of that router) or a +upnp kind (its port mapping is advertised first, as by default); the other members
start after it in the usual order; a cell with no such member keeps a0 as the host (its ticket names only a0's
private address: nobody can join). Members keep their homes (a0 home 0, ... b1 home 3) whatever the start order. Per
pair the report then says which member relayed it (`relay_member` of the `peer` and `path-changed` events, mapped
from participant id to name), and the summary counts the pairs relayed through a member and through the huddle
relay or TURN. In every mode each pair also gets the time from the later of its two `joined` to the first `message`
each end heard from the other (`message_views_s`; a member writes its line once its roster is complete) and from the
moment its sender wrote that line (`message_latency_s`), and a cell that did not connect shows how many of its pairs
exchanged lines both ways ("no (K/6 pairs)").
Exit status: 0 when every cell ran (connected or not), 1 when the lab cannot start, 2 on a usage error, 130 when
interrupted.
Python 3 standard library only.
"""
import argparse
import datetime
import ipaddress
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import tempfile
import time
import uuid

PREFIX = "natlab-"
# Side A (the host's) is the first kind of a cell's name; the pairs are taken in this order, so the more
# restrictive kind holds the host.
KINDS = ["udp-blocked", "cgnat", "symmetric", "port-restricted", "restricted", "full-cone"]
# Endpoint-independent mapping: every layer keeps the source port (masquerade without random, when the port is
# free, which it is here: one host per router). udp-blocked is left out: its home sends no UDP at all.
EIM = {"full-cone", "restricted", "port-restricted", "cgnat"}
PORT = 7000
RELAY = "10.99.0.1:3478"
TURN_IP = "10.99.0.2"
TURN = f"ada:secret@{TURN_IP}:443"
CORE = "10.99.0.254"  # the default gateway of the public side (see Topology)
# Routers that run miniupnpd (PCP, NAT-PMP, UPnP-IGD) on top of a plain kind's rules. miniupnpd maps nothing when
# its wan address is private or reserved (10/8 included), so these routers' wans are on a second, public-looking
# network on the same bridge, MAPPED_NET.0/24, whose gateway MAPPED_CORE is the core too; every other address stays.
UPNP_KINDS = {"symmetric+upnp": "symmetric", "port-restricted+upnp": "port-restricted"}
# Their cells (side A, side B), after the pairs of KINDS: the router that maps ports holds the host, whose ticket
# names the mapped address first.
UPNP_CELLS = [("symmetric+upnp", "symmetric+upnp"), ("symmetric+upnp", "symmetric"),
              ("symmetric+upnp", "port-restricted"), ("symmetric+upnp", "udp-blocked"),
              ("port-restricted+upnp", "symmetric")]
# IPv6-only homes (issue 39): kind IPV6, cells ipv6/2 and ipv6/4. Every address is in 2001:db8::/32 (the
# documentation prefix, routed only inside the lab), with nodad; no IPv4 address anywhere in these cells. Home i has
# 2001:db8:(11+i)::2/64 behind a router (wan 2001:db8:99::(11+i)/64) that does no NAT but drops unsolicited inbound
# in its forward hook; the core is V6_CORE, the relay listens on RELAY6. No coturn in these cells.
IPV6 = "ipv6"
V6_NET = "2001:db8:99"
V6_CORE = f"{V6_NET}::254"
RELAY6_IP = f"{V6_NET}::1"
RELAY6 = f"[{RELAY6_IP}]:3478"
MAPPED_NET = "198.20.0"
MAPPED_CORE = f"{MAPPED_NET}.254"
MINIUPNPD = "/usr/sbin/miniupnpd"
MINIUPNPD_TABLES = """table inet miniupnpd {
  chain forward { type filter hook forward priority 0; policy accept; jump forward_upnp; }
  chain forward_upnp { }
  chain prerouting { type nat hook prerouting priority dstnat; policy accept; jump prerouting_upnp; }
  chain postrouting { type nat hook postrouting priority srcnat; policy accept; jump postrouting_upnp; }
  chain prerouting_upnp { }
  chain postrouting_upnp { }
}
"""
CONNECT_WINDOW = 30.0  # seconds from the host's start
SETTLE = 6.0  # seconds after the last join before the final /peers
POLL = 0.1  # seconds between /peers at one member
STOP_GRACE = 5.0


class LabError(Exception):
    pass


class Interrupted(Exception):
    pass


def run(argv, input_text=None, timeout=15, check=True):
    result = subprocess.run(
        argv, input=input_text, capture_output=True, text=True, timeout=timeout, stdin=None if input_text else
        subprocess.DEVNULL)
    if check and result.returncode != 0:
        raise LabError(f"{' '.join(argv)}: exit {result.returncode}: {(result.stdout + result.stderr).strip()}")
    return result


def netns_list():
    out = run(["ip", "netns", "list"], check=False).stdout
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def sweep_leftovers():
    """Deletes natlab-* namespaces an earlier run left, after killing (SIGKILL, by pid) what still runs in them."""
    swept = []
    for name in netns_list():
        if not name.startswith(PREFIX):
            continue
        pids = run(["ip", "netns", "pids", name], check=False).stdout.split()
        for pid in pids:
            try:
                os.kill(int(pid), signal.SIGKILL)
            except (ProcessLookupError, ValueError):
                pass
        run(["ip", "netns", "delete", name], check=False)
        swept.append(name)
    return swept


# --- topology -----------------------------------------------------------------------------------------------------


def base_kind(kind):
    """The plain kind whose nftables rules a router of `kind` has (a +upnp kind adds miniupnpd to them)."""
    return UPNP_KINDS.get(kind, kind)


def maps_ports(kind):
    return kind in UPNP_KINDS


def firewall6_rules():
    """The ruleset of an IPv6 home router: no NAT, only the stateful firewall of IPv6 home routers (replies pass,
    unsolicited inbound does not), in the forward hook; its counter (in routers.txt) says how much it dropped."""
    return ("table inet natlab {\n  chain fw_forward {\n    type filter hook forward priority filter; policy accept;\n"
            "    iifname \"wan\" ct state new counter drop\n  }\n}\n")


def nat_rules(kind, wan_ip, home_ip):
    """The nftables ruleset of a router of `kind` (a cgnat layer is port-restricted)."""
    sets = ""
    pre = []
    forward = []
    post = ['oifname "wan" masquerade']
    if kind == "full-cone":
        pre = [f'iifname "wan" udp dport {PORT} dnat to {home_ip}:{PORT}']
        post = [f'oifname "wan" ip saddr {home_ip} udp sport {PORT} snat to {wan_ip}:{PORT}'] + post
    elif kind == "restricted":
        sets = "  set contacted {\n    type ipv4_addr\n    flags dynamic,timeout\n    timeout 5m\n  }\n"
        forward = ['iifname "lan" oifname "wan" update @contacted { ip daddr }']
        pre = [f'iifname "wan" udp dport {PORT} ip saddr @contacted dnat to {home_ip}:{PORT}']
    elif kind == "symmetric":
        post = ['oifname "wan" masquerade random,fully-random']
    elif kind not in ("port-restricted", "udp-blocked", "hairpin"):
        raise LabError(f"unknown kind {kind}")

    def chain(name, hook, priority, rules):
        body = "".join(f"    {rule}\n" for rule in rules)
        return f"  chain {name} {{\n    type {hook} priority {priority}; policy accept;\n{body}  }}\n"

    return (
        "table ip natlab {\n" + sets
        + chain("nat_pre", "nat hook prerouting", "dstnat", pre)
        + chain("fw_forward", "filter hook forward", "filter", forward)
        + chain("fw_input", "filter hook input", "filter", ['iifname "wan" ct state new drop'])
        + chain("nat_post", "nat hook postrouting", "srcnat", post)
        + "}\n")


class Topology:
    def __init__(self, tag, default_routes=True, workdir=None):
        self.tag = tag
        # The "internet core": 10.99.0.254 on the bridge, a default route there from every public host and router,
        # and a blackhole default route behind it, so a datagram to an address nobody routes (a peer's private
        # address) is dropped silently, as upstream routers do, instead of failing at sendto with ENETUNREACH.
        self.default_routes = default_routes
        self.namespaces = []
        self.rulesets = {}  # namespace -> nft ruleset text (for the report)
        self.workdir = workdir  # miniupnpd's files (a temporary directory when None)
        self.own_workdir = None
        self.mapped = False  # MAPPED_NET is on the bridge
        self.miniupnpds = []  # (router namespace, Popen, log file)
        self.ipv6 = False  # an IPv6-only cell (build_public6): no duplicate address detection in its namespaces

    def ns(self, short):
        name = f"{PREFIX}{self.tag}-{short}"
        run(["ip", "netns", "add", name])
        self.namespaces.append(name)
        self.ip(name, "link", "set", "lo", "up")
        if self.ipv6:
            # Besides nodad on every address: no DAD for the link-local addresses either (their interfaces are made
            # after this), or the first datagrams after the build waited about a second.
            for scope in ("all", "default"):
                self.exec(name, "sysctl", "-qw", f"net.ipv6.conf.{scope}.accept_dad=0")
        return name

    @staticmethod
    def ip(ns, *args):
        run(["ip", "-n", ns, *args])

    @staticmethod
    def exec(ns, *args, input_text=None):
        return run(["ip", "netns", "exec", ns, *args], input_text=input_text)

    def nft(self, ns, text):
        self.exec(ns, "nft", "-f", "-", input_text=text)
        self.rulesets[ns] = self.rulesets.get(ns, "") + text

    def veth(self, ns, ifname, peer_ns, peer_ifname):
        self.ip(ns, "link", "add", ifname, "type", "veth", "peer", "name", peer_ifname, "netns", peer_ns)

    def address(self, ns, ifname, cidr):
        # nodad: an IPv6 address is usable at once, without duplicate address detection's second or two.
        self.ip(ns, "address", "add", cidr, "dev", ifname, *(["nodad"] if ":" in cidr else []))
        self.ip(ns, "link", "set", ifname, "up")

    def on_bridge(self, ns, ifname, port, cidr):
        self.veth(ns, ifname, self.public, port)
        self.address(ns, ifname, cidr)
        self.ip(self.public, "link", "set", port, "master", "br0")
        self.ip(self.public, "link", "set", port, "up")

    def router(self, short, kind, wan_cidr, lan_cidr, home_ip, wan_peer=None):
        """A router namespace: wan on the public bridge (or on `wan_peer`'s lan), lan not yet linked."""
        ns = self.ns(short)
        if wan_peer is None:
            self.on_bridge(ns, "wan", short, wan_cidr)
            self.core_route(ns, mapped=wan_cidr.startswith(MAPPED_NET + "."))
        else:
            self.veth(ns, "wan", wan_peer, "lan")
            self.address(ns, "wan", wan_cidr)
            self.address(wan_peer, "lan", wan_peer_cidr(wan_cidr))
            self.ip(ns, "route", "add", "default", "via", wan_peer_cidr(wan_cidr).split("/")[0])
        self.exec(ns, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        self.nft(ns, nat_rules(kind, wan_cidr.split("/")[0], home_ip))
        return ns

    def build_public(self, mapped=False):
        """The bridge, the core, the relay and coturn's namespace; with `mapped`, MAPPED_NET too (for routers that
        run miniupnpd): MAPPED_CORE on the bridge, which routes between the two networks (without ICMP redirects, so
        every datagram between them takes the same path through it)."""
        self.public = self.ns("pub")
        self.mapped = mapped
        self.ip(self.public, "link", "add", "br0", "type", "bridge")
        self.ip(self.public, "link", "set", "br0", "up")
        if self.default_routes or mapped:
            self.ip(self.public, "address", "add", f"{CORE}/24", "dev", "br0")
            self.exec(self.public, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        if self.default_routes:
            self.ip(self.public, "route", "add", "blackhole", "default")
        if mapped:
            self.ip(self.public, "address", "add", f"{MAPPED_CORE}/24", "dev", "br0")
            self.exec(self.public, "sysctl", "-qw", "net.ipv4.conf.all.send_redirects=0")
            self.exec(self.public, "sysctl", "-qw", "net.ipv4.conf.br0.send_redirects=0")
        self.relay = self.ns("relay")
        self.on_bridge(self.relay, "eth0", "relay", "10.99.0.1/24")
        self.turn = self.ns("turn")
        self.on_bridge(self.turn, "eth0", "turn", f"{TURN_IP}/24")
        for ns in (self.relay, self.turn):
            self.core_route(ns)

    def build_public6(self, servers=1):
        """The IPv6-only public side: the bridge, V6_CORE on it (forwarding, a route to every home prefix through its
        router, added by add_home6, and a blackhole default route behind it), the relay's namespace at RELAY6_IP;
        with `servers` 2, a second namespace (self.turn, no coturn) at 2001:db8:99::2, for the check."""
        self.ipv6 = True
        self.public = self.ns("pub")
        self.ip(self.public, "link", "add", "br0", "type", "bridge")
        self.ip(self.public, "link", "set", "br0", "up")
        self.ip(self.public, "address", "add", f"{V6_CORE}/64", "dev", "br0", "nodad")
        self.exec(self.public, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        self.ip(self.public, "-6", "route", "add", "blackhole", "default")
        self.relay = self.ns("relay")
        self.on_bridge(self.relay, "eth0", "relay", f"{RELAY6_IP}/64")
        self.ip(self.relay, "-6", "route", "add", "default", "via", V6_CORE)
        self.turn = None
        if servers > 1:
            self.turn = self.ns("turn")
            self.on_bridge(self.turn, "eth0", "turn", f"{V6_NET}::2/64")
            self.ip(self.turn, "-6", "route", "add", "default", "via", V6_CORE)

    def add_home6(self, index):
        """Member `index`'s IPv6-only home: 2001:db8:(11+i)::2/64 behind a router (wan 2001:db8:99::(11+i)/64, lan
        2001:db8:(11+i)::1/64) that forwards without NAT and drops new inbound connections; returns (namespace, IP)."""
        octet = 11 + index
        router = self.ns(f"r{index}")
        self.on_bridge(router, "wan", f"r{index}", f"{V6_NET}::{octet}/64")
        self.ip(router, "-6", "route", "add", "default", "via", V6_CORE)
        self.exec(router, "sysctl", "-qw", "net.ipv6.conf.all.forwarding=1")
        self.nft(router, firewall6_rules())
        home = self.ns(f"h{index}")
        home_ip = f"2001:db8:{octet}::2"
        self.veth(router, "lan", home, "eth0")
        self.address(router, "lan", f"2001:db8:{octet}::1/64")
        self.address(home, "eth0", f"{home_ip}/64")
        self.ip(home, "-6", "route", "add", "default", "via", f"2001:db8:{octet}::1")
        self.ip(self.public, "-6", "route", "add", f"2001:db8:{octet}::/64", "via", f"{V6_NET}::{octet}")
        return home, home_ip

    def core_route(self, ns, mapped=False):
        """The default route to the core (MAPPED_CORE from an address on MAPPED_NET); without default routes, only
        a route to the other network when MAPPED_NET is on the bridge."""
        gateway, other = (MAPPED_CORE, "10.99.0.0/24") if mapped else (CORE, f"{MAPPED_NET}.0/24")
        if self.default_routes:
            self.ip(ns, "route", "add", "default", "via", gateway)
        elif self.mapped:
            self.ip(ns, "route", "add", other, "via", gateway)

    def start_miniupnpd(self, router, short):
        """miniupnpd in `router` (wan, lan): its nftables chains, its configuration (as Tests/HuddleCLITestSupport/
        MiniUPnPd.swift has them), started in the foreground with its log in WORKDIR/miniupnpd-SHORT/log; waits
        until it listens on UDP 5351 (at most 5 s)."""
        if self.workdir is None:
            self.own_workdir = self.workdir = tempfile.mkdtemp(prefix="natlab-miniupnpd-")
        directory = os.path.join(self.workdir, f"miniupnpd-{short}")
        os.makedirs(directory, exist_ok=True)
        self.nft(router, MINIUPNPD_TABLES)
        configuration = os.path.join(directory, "miniupnpd.conf")
        with open(configuration, "w") as conf:
            conf.write(
                "ext_ifname=wan\nlistening_ip=lan\nenable_natpmp=yes\nenable_upnp=yes\nsecure_mode=yes\n"
                f"system_uptime=yes\nuuid={uuid.uuid4()}\nlease_file={directory}/leases\n"
                "upnp_table_name=miniupnpd\nupnp_nat_table_name=miniupnpd\nupnp_forward_chain=forward_upnp\n"
                "upnp_nat_chain=prerouting_upnp\nupnp_nat_postrouting_chain=postrouting_upnp\n"
                "allow 1024-65535 192.168.0.0/16 1024-65535\ndeny 0-65535 0.0.0.0/0 0-65535\n")
        log = open(os.path.join(directory, "log"), "wb")
        # -d: in the foreground, logging to standard error; -P: a pid file of its own. ip netns exec execs it, so the
        # pid is miniupnpd's.
        popen = subprocess.Popen(["ip", "netns", "exec", router, MINIUPNPD, "-d", "-f", configuration, "-P",
                                  os.path.join(directory, "pid")], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        self.miniupnpds.append((router, popen, log))
        listening = wait_until(lambda: ":5351" in run(["ip", "netns", "exec", router, "ss", "-H", "-lnu",
                                                       "sport = :5351"], check=False).stdout
                               or popen.poll() is not None, time.monotonic() + 5, step=0.1)
        if not listening or popen.poll() is not None:
            with open(os.path.join(directory, "log"), errors="replace") as text:
                tail = text.read()[-500:]
            raise LabError(f"miniupnpd in {router} did not listen on UDP 5351 within 5 s: {tail}")

    def stop_miniupnpds(self):
        """SIGTERM (it deletes its rules), up to 2 s, then SIGKILL; by pid."""
        for _, popen, _ in self.miniupnpds:
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)
        for _, popen, log in self.miniupnpds:
            try:
                popen.wait(timeout=2)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait(timeout=5)
            log.close()
        self.miniupnpds = []

    def add_home(self, index, kind):
        """Member `index`'s home behind a router of `kind`; returns (home namespace, home IP)."""
        octet = 11 + index
        home_ip = f"192.168.{octet}.2"
        if kind == "cgnat":
            carrier = self.ns(f"c{index}")
            self.on_bridge(carrier, "wan", f"c{index}", f"10.99.0.{octet}/24")
            self.core_route(carrier)
            self.exec(carrier, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            self.nft(carrier, nat_rules("port-restricted", f"10.99.0.{octet}", None))
            router = self.router(f"r{index}", "port-restricted", f"100.64.{octet}.2/24", None, home_ip,
                                 wan_peer=carrier)
        else:
            wan = f"{MAPPED_NET if maps_ports(kind) else '10.99.0'}.{octet}/24"
            router = self.router(f"r{index}", base_kind(kind), wan, None, home_ip)
        home = self.ns(f"h{index}")
        self.veth(router, "lan", home, "eth0")
        self.address(router, "lan", f"192.168.{octet}.1/24")
        self.address(home, "eth0", f"{home_ip}/24")
        self.ip(home, "route", "add", "default", "via", f"192.168.{octet}.1")
        if maps_ports(kind):
            self.start_miniupnpd(router, f"r{index}")
        if kind == "udp-blocked":
            self.nft(home, "table inet office {\n  chain out {\n    type filter hook output priority 0; "
                     "policy accept;\n    meta l4proto udp drop\n  }\n}\n")
        return home, home_ip

    def add_hairpin(self, count):
        """`count` homes on one lan bridge behind one port-restricted router; returns [(namespace, IP)]."""
        router = self.router("r0", "hairpin", "10.99.0.11/24", None, None)
        self.ip(router, "link", "add", "lan", "type", "bridge")
        self.address(router, "lan", "192.168.11.1/24")
        homes = []
        for index in range(count):
            home = self.ns(f"h{index}")
            home_ip = f"192.168.11.{2 + index}"
            self.veth(router, f"p{index}", home, "eth0")
            self.ip(router, "link", "set", f"p{index}", "master", "lan")
            self.ip(router, "link", "set", f"p{index}", "up")
            self.address(home, "eth0", f"{home_ip}/24")
            self.ip(home, "route", "add", "default", "via", "192.168.11.1")
            homes.append((home, home_ip))
        return homes

    def delete(self):
        self.stop_miniupnpds()
        if self.own_workdir:
            shutil.rmtree(self.own_workdir, ignore_errors=True)
            self.own_workdir = None
        for name in reversed(self.namespaces):
            pids = run(["ip", "netns", "pids", name], check=False).stdout.split()
            for pid in pids:  # only processes this cell started can be inside
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except (ProcessLookupError, ValueError):
                    pass
            run(["ip", "netns", "delete", name], check=False)
        self.namespaces = []


def wan_peer_cidr(wan_cidr):
    """The carrier's lan address for a home router whose wan is 100.64.X.2/24: 100.64.X.1/24."""
    address, length = wan_cidr.split("/")
    parts = address.split(".")
    return ".".join(parts[:3] + ["1"]) + "/" + length


# --- processes ----------------------------------------------------------------------------------------------------


class Proc:
    """A process inside a namespace; stdout lines are timestamped, logged, and parsed as JSON events."""

    def __init__(self, label, ns, argv, env, directory, clock0):
        self.label = label
        self.clock0 = clock0
        self.events = []  # (monotonic time, event dict)
        self.lock = threading.Lock()
        self.stdin_lock = threading.Lock()
        self.on_event = None
        self.eof = False
        self.log = open(os.path.join(directory, f"{label}.out"), "w")
        self.err = open(os.path.join(directory, f"{label}.err"), "wb")
        self.started = time.monotonic()
        self.popen = subprocess.Popen(
            ["ip", "netns", "exec", ns, *argv], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err,
            env=env, start_new_session=True)
        self.pid = self.popen.pid  # ip netns exec execs the command: this is huddle's (or turnserver's) pid
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for raw in iter(self.popen.stdout.readline, b""):
            at = time.monotonic()
            line = raw.decode("utf-8", "replace").rstrip("\n")
            try:
                self.log.write(f"{at - self.clock0:9.3f} {line}\n")
            except ValueError:
                pass
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if not isinstance(event, dict):
                continue
            with self.lock:
                self.events.append((at, event))
            if self.on_event:
                self.on_event(self, at, event)
        self.eof = True

    def send(self, line):
        with self.stdin_lock:
            try:
                self.popen.stdin.write((line + "\n").encode())
                self.popen.stdin.flush()
                return True
            except (BrokenPipeError, OSError, ValueError):
                return False

    def close_stdin(self):
        with self.stdin_lock:
            try:
                self.popen.stdin.close()
            except (BrokenPipeError, OSError):
                pass

    def snapshot(self):
        with self.lock:
            return list(self.events)

    def first(self, name, since=0.0):
        with self.lock:
            for at, event in self.events:
                if event.get("event") == name and at >= since:
                    return at, event
        return None

    def count(self, name):
        with self.lock:
            return sum(1 for _, event in self.events if event.get("event") == name)

    def running(self):
        return self.popen.poll() is None

    def signal(self, number):
        if self.running():
            try:
                os.kill(self.pid, number)
            except ProcessLookupError:
                pass

    def finish(self):
        self.reader.join(timeout=2)
        for handle in (self.log, self.err):
            try:
                handle.close()
            except OSError:
                pass


class Member(Proc):
    def __init__(self, name, kind, side, ns, ip, argv, env, directory, clock0):
        super().__init__(name, ns, argv, env, directory, clock0)
        self.name = name
        self.kind = kind
        self.side = side
        self.ip = ip
        self.joined_at = None
        self.roster = set()  # names of the others it knows
        self.first_line = None  # (text, time written) sent from the reader thread right after `joined`
        self.send_on_joined = None
        self.roster_line_sent = False
        self.lines_sent = {}  # text -> time written (the roster line)
        self.polls_sent = 0
        self.answers = 0  # `peers` events
        self.heard = {}  # sender name -> time of its first `message` here
        self.last_poll = 0.0
        self.on_event = self._event

    def _event(self, _proc, at, event):
        kind = event.get("event")
        if kind == "peers":
            self.answers += 1
        elif kind == "message":
            self.heard.setdefault(event.get("name"), at)
        if kind == "joined" and self.joined_at is None:
            self.joined_at = at
            for other in event.get("participants") or []:
                self.roster.add(other.get("name"))
            if self.send_on_joined:
                text = self.send_on_joined
                sent = time.monotonic()
                if self.send(text):
                    self.first_line = (text, sent)
        elif kind == "participant-joined":
            self.roster.add(event.get("name"))
        elif kind in ("participant-left", "participant-removed"):
            self.roster.discard(event.get("name"))


def huddle_env(home):
    os.makedirs(home, exist_ok=True)
    return {"HOME": home, "PATH": os.environ.get("PATH", "/usr/bin:/bin:/usr/sbin:/sbin"), "LANG": "C.UTF-8"}


def wait_until(condition, deadline, step=0.02, tick=None):
    while True:
        if tick:
            tick()
        if condition():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(step)


def stop_all(procs, grace=STOP_GRACE):
    """Closes every standard input, waits up to `grace` seconds for all, then SIGKILLs what is left (by pid)."""
    for proc in procs:
        proc.close_stdin()
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(proc.running() for proc in procs):
        time.sleep(0.05)
    killed = []
    for proc in procs:
        if proc.running():
            proc.signal(signal.SIGKILL)
            killed.append(proc.label)
    for proc in procs:
        try:
            proc.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        proc.finish()
    return killed


# --- one cell -----------------------------------------------------------------------------------------------------


def cell_list(sizes):
    cells = []
    for size in sizes:
        for i, a in enumerate(KINDS):
            for b in KINDS[i:]:
                cells.append({"name": f"{a}+{b}/{size}", "a": a, "b": b, "size": size})
        cells.append({"name": f"hairpin/{size}", "a": "hairpin", "b": "hairpin", "size": size})
        for a, b in UPNP_CELLS:
            cells.append({"name": f"{a}+{b}/{size}", "a": a, "b": b, "size": size})
        cells.append({"name": f"{IPV6}/{size}", "a": IPV6, "b": IPV6, "size": size})
    return cells


def member_plan(cell):
    """[(name, kind, side)] in start order: the host first, the last joiner last."""
    if cell["a"] == "hairpin":
        return [(f"a{i}", "hairpin", "A") for i in range(cell["size"])]
    if cell["size"] == 2:
        return [("a0", cell["a"], "A"), ("b0", cell["b"], "B")]
    return [("a0", cell["a"], "A"), ("a1", cell["a"], "A"), ("b0", cell["b"], "B"), ("b1", cell["b"], "B")]


def reachable_unsolicited(kind):
    """Whether a home of `kind` takes a first datagram from anywhere at an address its member can advertise with no
    relay or STUN server to tell it: full-cone (the router's static forward of port 7000, given with --advertise) and
    the +upnp kinds (the port mapping, which the member advertises first)."""
    return kind == "full-cone" or maps_ports(kind)


def start_order(plan, member_relays_only):
    """The positions of `plan` in start order: the plan's order, except that with --member-relays-only the first
    member whose kind is reachable_unsolicited is moved first (the host); a plan without one keeps its order."""
    order = list(range(len(plan)))
    if member_relays_only:
        for position, (_, kind, _) in enumerate(plan):
            if reachable_unsolicited(kind):
                order.remove(position)
                order.insert(0, position)
                break
    return order


def hole_punch_feasible(kind_x, kind_y):
    """Whether plain hole punching (each side probing the other's reflexive address, no port prediction) can open a
    direct path between homes of these kinds in this lab (a +upnp kind counts as its plain kind here)."""
    kind_x, kind_y = base_kind(kind_x), base_kind(kind_y)
    if IPV6 in (kind_x, kind_y):  # no NAT: each side's probe to the other's address opens its own firewall
        return kind_x == kind_y
    if "udp-blocked" in (kind_x, kind_y):
        return False
    if kind_x in EIM and kind_y in EIM:
        return True
    other = kind_y if kind_x == "symmetric" else kind_x
    # A symmetric side reaches a cone only if the cone lets in a new source port of an address it sent to.
    return other in ("full-cone", "restricted")


def peers_snapshots(events):
    """[(time, {name: (path, address)})] from the `peer` ... `peers` groups of /peers answers."""
    snapshots = []
    current = {}
    for at, event in events:
        kind = event.get("event")
        if kind == "peer":
            # A connection whose handshake never completed is listed too, "direct" at the first address the peer's
            # member record names, with packets_sent 0: it counts as not established here.
            path = event.get("path") if (event.get("packets_sent") or 0) > 0 else "not established"
            # relay_member: the participant id of the member relaying the path (members relaying for members), or
            # None (direct, or a huddle relay or TURN server).
            current[event.get("name")] = (path, event.get("path_address"), event.get("relay_member"))
        elif kind == "peers":
            snapshots.append((at, current))
            current = {}
    return snapshots


def split_address(address):
    """("HOST", "PORT") of `HOST:PORT` or `[HOST]:PORT`; an IPv6 host is normalised ("2001:db8:99::1", whereas
    huddle prints every group: [2001:db8:99:0:0:0:0:1]:3478)."""
    host, _, port = (address or "").rpartition(":")
    host = host.strip("[]")
    try:
        host = str(ipaddress.ip_address(host))
    except ValueError:
        pass
    return host, port


def via_relay(address):
    """Whether `address` is the huddle relay's (RELAY on IPv4, RELAY6 in the IPv6 cells)."""
    return split_address(address) in (tuple(RELAY.split(":")), (RELAY6_IP, "3478"))


def turn_relayed(address):
    """Whether `address` is a relayed address of an allocation on coturn (TURN_IP, a port other than 443): a member
    that sends there itself reports the path `direct`, but coturn carries it to the peer, whose allocation it is."""
    host, _, port = (address or "").rpartition(":")
    return host == TURN_IP and port != "443"


def first_direct(events, other):
    """The first time `other` was seen direct (not at a TURN relayed address): a path-changed event or a /peers
    answer; None if never."""
    times = []
    for at, event in events:
        if event.get("event") == "path-changed" and event.get("name") == other and event.get("path") == "direct" \
                and not turn_relayed(event.get("path_address")):
            times.append(at)
            break
    for at, snapshot in peers_snapshots(events):
        path, address, _ = snapshot.get(other, (None, None, None))
        if path == "direct" and not turn_relayed(address):
            times.append(at)
            break
    return min(times) if times else None


def run_cell(cell, options, index, run_dir):
    name = cell["name"]
    directory = os.path.join(run_dir, name.replace("/", "-"))
    os.makedirs(directory, exist_ok=True)
    result = {"cell": name, "side_a": cell["a"], "side_b": cell["b"], "size": cell["size"], "connected": False,
              "join_s": None, "first_message_s": None, "path_end": None, "median_direct_s": None, "pairs": [],
              "members": {}, "notes": [], "log_dir": directory}
    topology = Topology(f"{index}", default_routes=not options.no_default_routes, workdir=directory)
    procs = []
    members = []
    relay = None
    coturn = None
    cell_started = time.monotonic()
    ipv6 = cell["a"] == IPV6
    relay_address = RELAY6 if ipv6 else RELAY
    member_relays_only = options.member_relays_only
    try:
        plan = member_plan(cell)
        order = start_order(plan, member_relays_only)
        result["member_relays_only"] = member_relays_only
        result["host"] = plan[order[0]][0]
        if ipv6:
            topology.build_public6()
            homes = [topology.add_home6(i) for i in range(len(plan))]
        else:
            topology.build_public(mapped=maps_ports(cell["a"]) or maps_ports(cell["b"]))
            if cell["a"] == "hairpin":
                homes = topology.add_hairpin(len(plan))
            else:
                homes = [topology.add_home(i, kind) for i, (_, kind, _) in enumerate(plan)]
        result["setup_s"] = round(time.monotonic() - cell_started, 2)
        clock0 = time.monotonic()
        # --member-relays-only: neither the huddle relay nor coturn runs (their namespaces stay, empty).
        relay = None if member_relays_only else Proc(
            "relay", topology.relay, [options.huddle, "relay", "--json", "--listen", relay_address],
            huddle_env(os.path.join(directory, "home-relay")), directory, clock0)
        if relay is not None:
            procs.append(relay)
        # No coturn in the IPv6 cells (no IPv4 there, and coturn is not on IPv6 here): the relay is the fallback.
        coturn = None if ipv6 or member_relays_only else Proc(
            "coturn", topology.turn,
            ["turnserver", "-n", f"--listening-ip={TURN_IP}", "--listening-port=443", f"--relay-ip={TURN_IP}",
             "--lt-cred-mech", "--user=ada:secret", "--realm=huddle.test", "--no-tls", "--no-dtls", "--no-cli",
             "--no-tcp-relay", f"--log-file={directory}/turn.log", "--simple-log", f"--pidfile={directory}/turn.pid",
             f"--userdb={directory}/turn.db"] + (["--verbose"] if options.coturn_verbose else [])
            + options.coturn_arg,
            {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, directory, clock0)
        if coturn is not None:
            procs.append(coturn)

        def coturn_ready():
            sockets = run(["ip", "netns", "exec", topology.turn, "ss", "-H", "-lntu", "sport = :443"],
                          check=False).stdout
            return "udp" in sockets and "tcp" in sockets

        if relay is not None and not wait_until(lambda: relay.first("relay-listening") is not None,
                                                time.monotonic() + 10):
            raise LabError("huddle relay printed no relay-listening within 10 s")
        if coturn is not None and not wait_until(coturn_ready, time.monotonic() + 10, step=0.1):
            raise LabError("coturn did not listen on UDP and TCP 443 within 10 s")

        t0 = time.monotonic()
        connect_deadline = t0 + CONNECT_WINDOW
        hard_deadline = t0 + options.timeout - 8  # room for the final /peers and the shutdown
        size = len(plan)

        def tick():
            now = time.monotonic()
            for member in members:
                if member.joined_at is None or not member.running():
                    continue
                if not member.roster_line_sent and len(member.roster) >= size - 1:
                    member.roster_line_sent = True
                    member.lines_sent[f"hello from {member.name}"] = time.monotonic()
                    member.send(f"hello from {member.name}")
                if now < poll_until[0] and now - member.last_poll >= POLL and (
                        member.answers >= member.polls_sent or now - member.last_poll > 1.0):
                    member.last_poll = now
                    member.polls_sent += 1
                    member.send("/peers")

        poll_until = [hard_deadline]

        def start_member(position, ticket):
            member_name, kind, side = plan[position]
            ns, ip = homes[position]
            argv = ["host"] if ticket is None else ["join", ticket]
            argv = [options.huddle] + argv + [
                "--json", "--name", member_name, "--identity", os.path.join(options.identity_dir, f"{member_name}.key"),
                "--listen", f"[{ip}]:{PORT}" if ipv6 else f"{ip}:{PORT}"]
            if member_relays_only:
                # No relay, no TURN: the only relays are members. A full-cone host advertises its router's public
                # address (the static forward of port 7000; nothing else would tell it), then its own.
                if ticket is None and kind == "full-cone":
                    argv += ["--advertise", f"10.99.0.{11 + position}:{PORT}", "--advertise", f"{ip}:{PORT}"]
            elif ticket is None and ipv6:
                argv += ["--relay", RELAY6]
            elif ticket is None:
                argv += ["--relay", RELAY, "--turn", TURN, "--turn", f"{TURN}?transport=tcp", "--share-turn"]
            elif options.joiners_get_turn and not ipv6:  # a diagnosis, not the lab's setup: joiners get TURN too
                argv += ["--turn", TURN, "--turn", f"{TURN}?transport=tcp"]
            argv += options.huddle_arg  # a diagnosis too, e.g. --log-level=debug (to NAME.err)
            member = Member(member_name, kind, side, ns, ip, argv, huddle_env(os.path.join(directory,
                            f"home-{member_name}")), directory, clock0)
            if position == order[-1]:
                member.send_on_joined = f"first from {member_name}"
            procs.append(member)
            members.append(member)
            return member

        host = start_member(order[0], None)
        if not wait_until(lambda: host.first("ticket") is not None or not host.running(),
                          min(t0 + 10, hard_deadline), tick=tick) or host.first("ticket") is None:
            raise LabError("the host printed no ticket")
        ticket = host.first("ticket")[1]["ticket"]
        all_joined = wait_until(lambda: host.joined_at is not None, min(t0 + 10, hard_deadline), tick=tick)
        for position in order[1:]:
            joiner = start_member(position, ticket)
            ok = wait_until(lambda: joiner.joined_at is not None or not joiner.running(),
                            min(connect_deadline, hard_deadline), tick=tick)
            if not ok or joiner.joined_at is None:
                all_joined = False
                result["notes"].append(f"{joiner.name} ({joiner.kind}) did not join"
                                       + (f" (exit {joiner.popen.poll()})" if not joiner.running() else ""))
                break
        last = members[-1]
        if all_joined and len(members) == size:
            path_end = last.joined_at + SETTLE
            result["join_s"] = round(last.joined_at - last.started, 3)
        else:
            path_end = connect_deadline
        poll_until[0] = min(path_end, hard_deadline)

        def heard_all():
            if len(members) < size:
                return False
            for member in members:
                heard = {sender for sender, at in list(member.heard.items()) if at <= connect_deadline}
                if len(heard & {m.name for m in members if m is not member}) < size - 1:
                    return False
            return True

        wait_until(lambda: time.monotonic() >= poll_until[0] and (heard_all() or time.monotonic() >= connect_deadline),
                   hard_deadline, step=0.02, tick=tick)
        # The final /peers: wait for every outstanding answer, then one more each.
        final_deadline = time.monotonic() + 3
        for member in members:
            if member.running() and member.joined_at is not None:
                wait_until(lambda: member.answers >= member.polls_sent, final_deadline)
                member.final_poll = True
                member.polls_sent += 1
                member.send("/peers")
        for member in members:
            if getattr(member, "final_poll", False):
                wait_until(lambda: member.answers >= member.polls_sent, final_deadline)
        result["connected"] = all_joined and len(members) == size and heard_all()
        result["ran_s"] = round(time.monotonic() - t0, 2)
        dump_routers(topology, directory)
    except LabError as error:
        result["notes"].append(f"lab error: {error}")
    finally:
        result["stopping_at"] = time.monotonic()
        killed = stop_all([m for m in members])
        if killed:
            result["notes"].append("killed after 5 s: " + ", ".join(killed))
        if relay is not None:
            relay.signal(signal.SIGTERM)
            try:
                relay.popen.wait(timeout=3)
            except subprocess.TimeoutExpired:
                relay.signal(signal.SIGKILL)
            stop_all([relay], grace=0)
        if coturn is not None:
            coturn.signal(signal.SIGKILL)
            stop_all([coturn], grace=0)
        topology.delete()
    result["cell_s"] = round(time.monotonic() - cell_started, 2)
    analyse(cell, result, members, relay, directory)
    return result


def dump_routers(topology, directory):
    """Every router's conntrack table and nft ruleset (with the restricted set's contents), for the evidence."""
    with open(os.path.join(directory, "routers.txt"), "w") as out:
        for ns in topology.rulesets:
            out.write(f"### {ns}\n")
            listings = [["conntrack", "-L"], ["nft", "list", "ruleset"]]
            if "table inet natlab" in topology.rulesets[ns]:  # an IPv6 router: conntrack lists IPv4 by default
                listings.insert(1, ["conntrack", "-L", "-f", "ipv6"])
            for argv in listings:
                try:
                    done = run(["ip", "netns", "exec", ns, *argv], check=False, timeout=5)
                    out.write(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}\n")
                except (subprocess.TimeoutExpired, OSError) as error:
                    out.write(f"$ {' '.join(argv)}: {error}\n")


def analyse(cell, result, members, relay, directory):
    stopping_at = result.pop("stopping_at", None) or float("inf")
    events = {m.name: [(at, e) for at, e in m.snapshot() if at < stopping_at] for m in members}
    clock0 = members[0].clock0 if members else 0
    # Participant ids to names (each member's own id is in its `joined`; `relay_member` is a participant id).
    ids = {}
    for member in members:
        for _, event in events[member.name]:
            if event.get("event") == "joined" and event.get("participant"):
                ids[event["participant"]] = member.name
            if event.get("event") == "joined":
                for other in event.get("participants") or []:
                    if other.get("participant"):
                        ids.setdefault(other["participant"], other.get("name"))
            elif event.get("event") == "participant-joined" and event.get("participant"):
                ids.setdefault(event["participant"], event.get("name"))

    def member_name(participant):
        if participant is None:
            return None
        if participant in ids:
            return ids[participant]
        matches = {name for key, name in ids.items() if key.startswith(participant) or participant.startswith(key)}
        return matches.pop() if len(matches) == 1 else f"?{participant}"

    for member in members:
        info = {
            "kind": member.kind, "side": member.side, "ip": member.ip,
            "started_s": round(member.started - clock0, 3),
            "joined_s": round(member.joined_at - clock0, 3) if member.joined_at else None,
            "exit": member.popen.poll(),
            "heard": sorted({e.get("name") for _, e in events[member.name] if e.get("event") == "message"}),
            "turn": [{k: e.get(k) for k in ("transport", "standby", "relayed", "error")} | {"t": round(at - clock0, 3)}
                     for at, e in events[member.name] if e.get("event") == "turn"],
            "path_changes": [{"t": round(at - clock0, 3), "name": e.get("name"), "path": e.get("path"),
                              "address": e.get("path_address"), "relay_member": member_name(e.get("relay_member"))}
                             for at, e in events[member.name] if e.get("event") == "path-changed"],
            "trouble": [{"t": round(at - clock0, 3)} | e for at, e in events[member.name]
                        if e.get("event") in ("error", "undelivered", "participant-left", "messages-dropped",
                                              "participant-unresponsive")],
            "port_mapping": [{"t": round(at - clock0, 3)} | {k: e.get(k) for k in ("gateway", "protocol", "external",
                                                                                    "lifetime_s", "error")}
                             for at, e in events[member.name] if e.get("event") == "port-mapping"],
        }
        result["members"][member.name] = info
    if relay is not None:
        stopped = relay.first("relay-stopped")
        if stopped:
            result["relay_forwarded_packets"] = stopped[1].get("forwardedPackets")
    # First message: the last joiner's line at the host.
    if len(members) == cell["size"] and members[-1].first_line:
        text, sent = members[-1].first_line
        for at, event in events[members[0].name]:
            if event.get("event") == "message" and event.get("text") == text:
                result["first_message_s"] = round(at - sent, 3)
                break
    # Pairs.
    direct_times = []
    counts = {"direct": 0, "relayed": 0, "split": 0, "not established": 0}
    # Pairs in the plan's order (a0, a1, b0, b1), whatever order the members started in.
    canonical = sorted(members, key=lambda m: [n for n, _, _ in member_plan(cell)].index(m.name))
    for i, x in enumerate(canonical):
        for y in canonical[i + 1:]:
            pair = {"pair": f"{x.name}-{y.name}", "kinds": f"{x.kind}/{y.kind}",
                    "feasible": (cell["a"] == "hairpin") or hole_punch_feasible(x.kind, y.kind),
                    "eim": x.kind in EIM or y.kind in EIM,
                    # A member whose router maps ports is reachable at its mapped address from anywhere: the pair
                    # should end direct unless the other one is udp-blocked.
                    "mapped": maps_ports(x.kind) or maps_ports(y.kind)}
            finals = []
            for me, other in ((x, y), (y, x)):
                snaps = [s for at, s in peers_snapshots(events[me.name])]
                final = snaps[-1].get(other.name) if snaps else None
                if final:
                    final = (final[0], final[1], member_name(final[2]))
                finals.append(final)
                # [path, path_address, the relaying member's name or None]
                pair[f"end_{me.name}"] = list(final) if final else None
            paths = [f[0] if f else None for f in finals]
            for position, (me, other) in enumerate(((x, y), (y, x))):
                if paths[position] == "direct" and turn_relayed(finals[position][1]):
                    paths[position] = "relayed"
                    result["notes"].append(f"{me.name} reports {other.name} direct at {finals[position][1]}, "
                                           f"{other.name}'s TURN relayed address: counted relayed")
            state = ("not established" if None in paths or "not established" in paths
                     else paths[0] if paths[0] == paths[1] else "split")
            pair["end"] = state
            # Which member relayed it (members relaying for members): the names either end reports; None when no
            # end reports a member (direct, or a huddle relay or TURN server).
            relaying = sorted({f[2] for f in finals if f and f[0] == "relayed" and f[2]})
            pair["relay_member"] = relaying[0] if len(relaying) == 1 else (relaying or None)
            if len(relaying) > 1:
                result["notes"].append(f"{x.name}-{y.name}: the ends name different relaying members "
                                       f"({', '.join(relaying)})")
            if state == "relayed":
                pair["relayed_by"] = ("member " + " ".join(relaying) if relaying
                                      else "huddle relay" if any(via_relay(f[1]) for f in finals)
                                      else "turn" if any((f[1] or "").startswith(TURN_IP + ":") for f in finals)
                                      else "?")
            counts[state] += 1
            if x.joined_at and y.joined_at:
                reference = max(x.joined_at, y.joined_at)
                seen = [first_direct(events[x.name], y.name), first_direct(events[y.name], x.name)]
                pair["direct_views_s"] = [round(t - reference, 3) if t else None for t in seen]
                if None not in seen:
                    pair["direct_s"] = round(max(seen) - reference, 3)
                    direct_times.append(pair["direct_s"])
                # The first `message` each end heard from the other, from the later `joined` of the two: [x heard
                # y, y heard x] (a member sends its line once its roster names every other member).
                firsts = [next(((at, e.get("text")) for at, e in events[me.name] if e.get("event") == "message"
                                and e.get("name") == other.name), (None, None)) for me, other in ((x, y), (y, x))]
                pair["message_views_s"] = [round(at - reference, 3) if at else None for at, _ in firsts]
                # The same messages from the moment their sender wrote them (its roster line, or the last joiner's
                # line right after its `joined`): [y to x, x to y].
                latencies = []
                for (at, text), sender in zip(firsts, (y, x)):
                    sent = sender.lines_sent.get(text) or (sender.first_line[1] if sender.first_line
                                                          and sender.first_line[0] == text else None)
                    latencies.append(round(at - sent, 3) if at and sent else None)
                pair["message_latency_s"] = latencies
            result["pairs"].append(pair)
    # Pairs of the cell (started or not) whose two members each heard a `message` from the other.
    result["pairs_heard"] = sum(1 for p in result["pairs"] if None not in (p.get("message_views_s") or [None]))
    result["pairs_total"] = cell["size"] * (cell["size"] - 1) // 2
    total = len(result["pairs"])
    if total:
        if counts["direct"] == total:
            result["path_end"] = "direct"
        elif counts["relayed"] == total:
            result["path_end"] = "relayed"
        else:
            parts = [f"{n} {k}" for k, n in counts.items() if n]
            result["path_end"] = "mixed: " + ", ".join(parts)
    result["path_counts"] = counts
    if direct_times:
        result["median_direct_s"] = round(statistics.median(direct_times), 3)
        result["direct_pairs"] = len(direct_times)
    # Relayed through what: the huddle relay or coturn (UDP or TCP allocation).
    relayed_via = set()
    by_member = {}  # relaying member -> the pairs it relays (at either end)
    for pair in result["pairs"]:
        for key, value in pair.items():
            if key.startswith("end_") and value and (value[0] == "relayed" or turn_relayed(value[1])):
                if value[2]:
                    by_member.setdefault(value[2], []).append(pair["pair"])
                    continue
                relayed_via.add("huddle relay" if via_relay(value[1]) else
                                "turn" if (value[1] or "").startswith(TURN_IP + ":") else value[1])
    for relaying, pairs in sorted(by_member.items()):
        relayed_via.add(f"member {relaying} for {' '.join(dict.fromkeys(pairs))}")
    result["member_relayed_pairs"] = sum(1 for p in result["pairs"] if p["end"] == "relayed" and p["relay_member"])
    over_tcp = [m.name for m in members if any(
        t["transport"] == "tcp" and t["relayed"] and not t["standby"] for t in result["members"][m.name]["turn"])]
    if over_tcp and "turn" in relayed_via:
        relayed_via.discard("turn")
        relayed_via.add("turn, over tcp for " + " ".join(over_tcp))
    if relayed_via:
        result["relayed_via"] = sorted(relayed_via)
    for member in members:
        info = result["members"][member.name]
        if info["joined_s"] is None:
            continue
        missing = sorted({m.name for m in members if m is not member} - set(info["heard"]))
        if missing:
            result["notes"].append(f"{member.name} heard nothing from {', '.join(missing)}")
        for trouble in info["trouble"]:
            if trouble.get("event") != "participant-unresponsive":
                result["notes"].append(f"{member.name}: {trouble.get('event')} {trouble.get('name') or trouble.get('code') or ''}".strip())
    # A merged timeline for reading a cell afterwards (the shutdown included).
    with open(os.path.join(directory, "timeline.txt"), "w") as timeline:
        lines = []
        for member in members:
            for at, event in member.snapshot():
                if event.get("event") in ("peer", "peers"):
                    continue
                lines.append((at, f"{at - clock0:9.3f} {member.name:3} {json.dumps(event, sort_keys=True)}"))
        for _, line in sorted(lines):
            timeline.write(line + "\n")


# --- NAT emulation check (plain UDP, no huddle) -------------------------------------------------------------------

# Both probes take HOST:PORT or [IPV6]:PORT, and print sources the same way.
PROBE_ADDRESSES = r"""
import socket
def parse(spec):
    host, port = spec.rsplit(":", 1)
    return host.strip("[]"), int(port)
def family(spec):
    return socket.AF_INET6 if ":" in parse(spec)[0] else socket.AF_INET
def show(source):
    return ("[%s]:%d" if ":" in source[0] else "%s:%d") % source[:2]
"""

# Binds every address given, waits (up to 4 s) for a probe on the first, prints where it came from, then sends a
# datagram labelled with its own address to that source from every socket (3 times, 50 ms apart).
SERVER_PROBE = PROBE_ADDRESSES + r"""
import json, select, socket, sys, time
socks = []
for spec in sys.argv[1:]:
    sock = socket.socket(family(spec), socket.SOCK_DGRAM)
    sock.bind(parse(spec))
    socks.append((spec, sock))
ready, _, _ = select.select([socks[0][1]], [], [], 4)
if not ready:
    print(json.dumps({"seen": None}), flush=True)
    sys.exit(0)
_, source = socks[0][1].recvfrom(2048)
print(json.dumps({"seen": show(source)}), flush=True)
for _ in range(3):
    for spec, sock in socks:
        sock.sendto(spec.encode(), source)
    time.sleep(0.05)
"""

# Binds HOST:PORT, sends a probe to each target (3 times, 50 ms apart), then for LISTEN seconds prints the label and
# source of every datagram that arrives.
HOME_PROBE = PROBE_ADDRESSES + r"""
import json, socket, sys, time
listen = float(sys.argv[2])
sock = socket.socket(family(sys.argv[1]), socket.SOCK_DGRAM)
sock.bind(parse(sys.argv[1]))
for _ in range(3):
    for target in sys.argv[3:]:
        try:
            sock.sendto(b"probe", parse(target))
        except OSError as error:
            print(json.dumps({"send_error": str(error)}), flush=True)
    time.sleep(0.05)
heard = {}
end = time.monotonic() + listen
while time.monotonic() < end:
    sock.settimeout(max(0.01, end - time.monotonic()))
    try:
        data, source = sock.recvfrom(2048)
    except OSError:
        continue
    heard[data.decode(errors="replace")] = show(source)
print(json.dumps({"heard": heard}), flush=True)
"""


# Asks GATEWAY:5351 over NAT-PMP for its external address (opcode 0), then for a UDP mapping of PORT (opcode 1,
# suggested external port PORT, 120 s); prints the answers (3 tries of 1 s each).
NATPMP_PROBE = r"""
import json, socket, struct, sys
gateway, port = sys.argv[1], int(sys.argv[2])
sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
sock.settimeout(1.0)
def ask(request):
    for _ in range(3):
        sock.sendto(request, (gateway, 5351))
        try:
            return sock.recvfrom(64)[0]
        except socket.timeout:
            continue
    return None
out = {}
data = ask(struct.pack("!BB", 0, 0))
if data and len(data) >= 12:
    out["address_result"] = struct.unpack("!H", data[2:4])[0]
    out["address"] = socket.inet_ntoa(data[8:12])
data = ask(struct.pack("!BBHHHI", 0, 1, 0, port, port, 120))
if data and len(data) >= 16:
    _, _, result, _, internal, external, lifetime = struct.unpack("!BBHIHHI", data[:16])
    out.update(result=result, internal_port=internal, external_port=external, lifetime=lifetime)
else:
    out["error"] = "no answer"
print(json.dumps(out), flush=True)
"""


def probe_proc(ns, script, args):
    return subprocess.Popen(["ip", "netns", "exec", ns, sys.executable, "-c", script, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL)


def probe_output(proc, timeout=10):
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else {}


def check_kind(kind, tag):
    """Mapping and filtering of one kind, seen from two servers (10.99.0.1, 10.99.0.2) and a third address
    (10.99.0.3) the home never sent to. For a router that maps ports, then: a NAT-PMP mapping of port 7000 asked
    from the home, and whether a datagram from 10.99.0.3 to the mapped address reaches the home."""
    topology = Topology(tag)
    servers = []
    port_mapping = None
    try:
        topology.build_public(mapped=maps_ports(kind))
        topology.ip(topology.turn, "address", "add", "10.99.0.3/24", "dev", "eth0")
        home, home_ip = topology.add_home(0, kind)
        s1 = probe_proc(topology.relay, SERVER_PROBE, ["10.99.0.1:4001", "10.99.0.1:4002"])
        s2 = probe_proc(topology.turn, SERVER_PROBE, ["10.99.0.2:4001", "10.99.0.3:4001"])
        servers = [s1, s2]
        time.sleep(0.3)
        home_proc = probe_proc(home, HOME_PROBE, [f"{home_ip}:{PORT}", "1.5", "10.99.0.1:4001", "10.99.0.2:4001"])
        servers.append(home_proc)
        seen1, seen2, heard = probe_output(s1), probe_output(s2), probe_output(home_proc).get("heard", {})
        if maps_ports(kind):
            port_mapping = check_port_mapping(topology, home, home_ip, servers)
    finally:
        for proc in servers:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        topology.delete()
    port1 = (seen1.get("seen") or ":").rsplit(":", 1)[1]
    port2 = (seen2.get("seen") or ":").rsplit(":", 1)[1]
    if not port1 or not port2:
        mapping = "no UDP leaves"
    elif port1 == port2:
        mapping = f"endpoint-independent (port {port1})"
    else:
        mapping = f"address/port-dependent (ports {port1}, {port2})"
    if not heard and mapping == "no UDP leaves":
        filtering = "-"
    elif "10.99.0.3:4001" in heard:
        filtering = "endpoint-independent"
    elif "10.99.0.1:4002" in heard:
        filtering = "address-dependent"
    elif "10.99.0.1:4001" in heard:
        filtering = "address-and-port-dependent"
    else:
        filtering = "nothing comes back"
    return {"kind": kind, "seen_by_10.99.0.1": seen1.get("seen"), "seen_by_10.99.0.2": seen2.get("seen"),
            "heard_from": sorted(heard), "mapping": mapping, "filtering": filtering, "port_mapping": port_mapping}


def check_ipv6(tag):
    """The IPv6 home router: the home sends from [2001:db8:11::2]:7000 to [2001:db8:99::1]:4001 and
    [2001:db8:99::2]:4001, which answer as in check_kind, also from [2001:db8:99::1]:4002 and [2001:db8:99::3]:4001.
    Expected: no translation (both see the home's own address and port), address-and-port-dependent filtering."""
    topology = Topology(tag)
    procs = []
    one, other_port, two, third = (f"[{V6_NET}::1]:4001", f"[{V6_NET}::1]:4002", f"[{V6_NET}::2]:4001",
                                   f"[{V6_NET}::3]:4001")
    try:
        topology.build_public6(servers=2)
        topology.ip(topology.turn, "address", "add", f"{V6_NET}::3/64", "dev", "eth0", "nodad")
        home, home_ip = topology.add_home6(0)
        s1 = probe_proc(topology.relay, SERVER_PROBE, [one, other_port])
        s2 = probe_proc(topology.turn, SERVER_PROBE, [two, third])
        procs = [s1, s2]
        time.sleep(0.3)
        home_proc = probe_proc(home, HOME_PROBE, [f"[{home_ip}]:{PORT}", "1.5", one, two])
        procs.append(home_proc)
        seen1, seen2, heard = probe_output(s1), probe_output(s2), probe_output(home_proc).get("heard", {})
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        topology.delete()
    own = f"[{home_ip}]:{PORT}"
    if not seen1.get("seen") or not seen2.get("seen"):
        mapping = "no UDP leaves"
    elif seen1["seen"] == seen2["seen"] == own:
        mapping = f"none: both see the home's own {own}"
    else:
        mapping = f"translated ({seen1['seen']}, {seen2['seen']})"
    filtering = ("endpoint-independent" if third in heard else "address-dependent" if other_port in heard
                 else "address-and-port-dependent" if one in heard else "nothing comes back")
    return {"kind": IPV6, "seen_by_10.99.0.1": seen1.get("seen"), "seen_by_10.99.0.2": seen2.get("seen"),
            "heard_from": sorted(heard), "mapping": mapping, "filtering": filtering}


def check_port_mapping(topology, home, home_ip, procs):
    """NAT-PMP from the home (RFC 6886: the external address, then a UDP mapping of port 7000 for 120 s); then
    10.99.0.3:4001, which the home never sent to, sends to the mapped address while the home listens on port 7000."""
    gateway = home_ip.rsplit(".", 1)[0] + ".1"
    asking = probe_proc(home, NATPMP_PROBE, [gateway, str(PORT)])
    procs.append(asking)
    answer = probe_output(asking)
    if answer.get("result") != 0 or not answer.get("address"):
        return f"NAT-PMP: no mapping ({json.dumps(answer)})"
    external = f"{answer['address']}:{answer['external_port']}"
    listener = probe_proc(home, HOME_PROBE, [f"{home_ip}:{PORT}", "1.5"])
    procs.append(listener)
    time.sleep(0.3)
    sender = probe_proc(topology.turn, HOME_PROBE, ["10.99.0.3:4001", "0", external])
    procs.append(sender)
    probe_output(sender)
    heard = probe_output(listener).get("heard", {})
    return (f"NAT-PMP: {external} for {answer['lifetime']} s; a datagram from 10.99.0.3:4001 to it "
            + (f"reached the home (from {heard['probe']})" if "probe" in heard else "did not reach the home"))


def check_hairpin(tag):
    """Two homes behind one router: does a datagram to the other's public mapping come back in (hairpinning)?"""
    topology = Topology(tag)
    procs = []
    try:
        topology.build_public()
        (h0, ip0), (h1, ip1) = topology.add_hairpin(2)
        s1 = probe_proc(topology.relay, SERVER_PROBE, ["10.99.0.1:4001"])
        procs.append(s1)
        time.sleep(0.3)
        listener = probe_proc(h1, HOME_PROBE, [f"{ip1}:{PORT}", "2.5", "10.99.0.1:4001"])
        procs.append(listener)
        seen = probe_output(s1).get("seen")
        sender = None
        if seen:
            sender = probe_proc(h0, HOME_PROBE, [f"{ip0}:{PORT}", "0.5", seen])
            procs.append(sender)
            probe_output(sender)
        heard = probe_output(listener).get("heard", {})
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        topology.delete()
    hairpinned = "probe" in heard
    return {"kind": "hairpin", "mapping_of_a1": seen, "heard_from": sorted(heard),
            "mapping": f"a1 mapped to {seen}",
            "filtering": ("a0's datagram to that mapping reached a1 from " + heard["probe"]) if hairpinned
            else "a0's datagram to a1's public mapping did not reach a1 (no hairpinning)"}


def nat_check(upnp_kinds=(), ipv6=False):
    """Every plain kind and hairpin, then `upnp_kinds` (the routers with miniupnpd the cells use), then the IPv6
    router when `ipv6` (the cells include it)."""
    rows = []
    for index, kind in enumerate(KINDS):
        rows.append(check_kind(kind, f"chk{index}"))
    rows.append(check_hairpin("chkhp"))
    for index, kind in enumerate(upnp_kinds):
        rows.append(check_kind(kind, f"chku{index}"))
    if ipv6:
        rows.append(check_ipv6("chk6"))
    return rows


def nat_check_table(rows):
    with_mapping = any(row.get("port_mapping") for row in rows)
    lines = ["| kind | mapping (ports seen by 10.99.0.1 and 10.99.0.2) | filtering | replies heard from |"
             + (" port mapping |" if with_mapping else ""),
             "| --- | --- | --- | --- |" + (" --- |" if with_mapping else "")]
    for row in rows:
        lines.append(f"| {row['kind']} | {row['mapping']} | {row['filtering']} | "
                     f"{', '.join(row['heard_from']) or '-'} |"
                     + (f" {row.get('port_mapping') or '-'} |" if with_mapping else ""))
    return "\n".join(lines)


# --- report -------------------------------------------------------------------------------------------------------


def fmt(value):
    return "-" if value is None else f"{value:.3f}"


def mapping_text(result):
    """Each member's last `port-mapping` event: `a0 pcp 198.20.0.11:7000` when mapped (with the count when it
    printed more than one), the members that got none grouped by error (`a1 b0: unanswered`), "-" when none printed
    one."""
    mapped = []
    failed = {}
    for name, info in result["members"].items():
        events = info.get("port_mapping") or []
        if not events:
            continue
        last = events[-1]
        if last.get("external"):
            mapped.append(f"{name} {last.get('protocol')} {last['external']}"
                          + (f" ({len(events)} events)" if len(events) > 1 else ""))
        else:
            failed.setdefault(last.get("error") or "?", []).append(name)
    return "; ".join(mapped + [f"{' '.join(names)}: {error}" for error, names in failed.items()]) or "-"


def table(results):
    rows = ["| cell | connected | join s | first message s | path at end | median time to direct s | port mapping "
            "| notes |",
            "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for r in results:
        median = fmt(r["median_direct_s"])
        if r.get("direct_pairs") and r["direct_pairs"] < len(r["pairs"]):
            median += f" ({r['direct_pairs']}/{len(r['pairs'])} pairs)"
        path = r["path_end"] or "-"
        if r.get("relayed_via") and "relayed" in path:
            path += " (" + ", ".join(r["relayed_via"]) + ")"
        notes = "; ".join(dict.fromkeys(r["notes"]))
        connected = "yes" if r["connected"] else f"no ({r.get('pairs_heard', 0)}/{r.get('pairs_total', '?')} pairs)"
        rows.append(f"| {r['cell']} | {connected} | {fmt(r['join_s'])} | "
                    f"{fmt(r['first_message_s'])} | {path} | {median} | {mapping_text(r)} | {notes} |")
    return "\n".join(rows)


def summary(results):
    lines = []
    connected = sum(1 for r in results if r["connected"])
    lines.append(f"- cells connected: {connected}/{len(results)}")
    # Cells with a router that maps ports have lines of their own, below.
    eim_cells = [r for r in results if r["side_a"] != "hairpin" and "udp-blocked" not in (r["side_a"], r["side_b"])
                 and (r["side_a"] in EIM or r["side_b"] in EIM)
                 and not (maps_ports(r["side_a"]) or maps_ports(r["side_b"]))]

    def eim_direct(r):
        pairs = [p for p in r["pairs"] if p["eim"]]
        return bool(pairs) and all(p["end"] == "direct" for p in pairs)

    ok = [r for r in eim_cells if eim_direct(r)]
    lines.append(f"- cells where one side has endpoint-independent mapping (full-cone, restricted, port-restricted, "
                 f"cgnat; udp-blocked and hairpin cells left out) whose pairs with an EIM member all ended direct: "
                 f"{len(ok)}/{len(eim_cells)}")
    feasible_cells = [r for r in eim_cells if all(p["feasible"] for p in r["pairs"] if p["eim"])]
    ok_feasible = [r for r in feasible_cells if eim_direct(r)]
    lines.append(f"- of those, cells whose EIM pairs plain hole punching can open (no symmetric-vs-port-restricted "
                 f"or symmetric-vs-cgnat pair): {len(ok_feasible)}/{len(feasible_cells)} ended direct")
    pairs = [p for r in results for p in r["pairs"] if r["side_a"] not in ("hairpin", IPV6) and not p.get("mapped")]
    feasible = [p for p in pairs if p["feasible"]]
    lines.append(f"- pairs that plain hole punching can open which ended direct: "
                 f"{sum(1 for p in feasible if p['end'] == 'direct')}/{len(feasible)}; pairs it cannot open that "
                 f"ended direct: {sum(1 for p in pairs if not p['feasible'] and p['end'] == 'direct')}/"
                 f"{sum(1 for p in pairs if not p['feasible'])}")
    v6 = [(r["cell"], p) for r in results if r["side_a"] == IPV6 for p in r["pairs"]]
    if v6:
        lines.append(f"- pairs of IPv6-only homes (no NAT, stateful firewalls) which ended direct: "
                     f"{sum(1 for _, p in v6 if p['end'] == 'direct')}/{len(v6)}"
                     + "".join(f"; {cell} {p['pair']} {p['end']}" for cell, p in v6 if p["end"] != "direct"))
    mapped = [(r["cell"], p) for r in results for p in r["pairs"] if p.get("mapped")]
    if mapped:
        blocked = [(cell, p) for cell, p in mapped if "udp-blocked" in p["kinds"].split("/")]
        open_ = [(cell, p) for cell, p in mapped if (cell, p) not in blocked]
        lines.append(f"- pairs with a member behind a router that maps ports ({', '.join(UPNP_KINDS)}: reachable at "
                     f"its mapped address from anywhere) and no udp-blocked member, which ended direct: "
                     f"{sum(1 for _, p in open_ if p['end'] == 'direct')}/{len(open_)}"
                     + (f"; with a udp-blocked member, ended relayed: "
                        f"{sum(1 for _, p in blocked if p['end'] == 'relayed')}/{len(blocked)}" if blocked else ""))
        missed_pairs = [f"{cell} {p['pair']} ({p['end']})" for cell, p in open_ if p["end"] != "direct"]
        if missed_pairs:
            lines.append(f"- those that did not end direct: {', '.join(missed_pairs)}")
        behind = [(name, info) for r in results for name, info in r["members"].items() if maps_ports(info["kind"])]
        granted = [info["port_mapping"][-1] for _, info in behind
                   if info["port_mapping"] and info["port_mapping"][-1].get("external")]
        protocols = {}
        for event in granted:
            protocols[event.get("protocol")] = protocols.get(event.get("protocol"), 0) + 1
        lines.append(f"- members behind a router that maps ports with a port mapping at the end: {len(granted)}/"
                     f"{len(behind)} ({', '.join(f'{k} {n}' for k, n in sorted(protocols.items())) or 'none'})")
    others = [info for r in results for info in r["members"].values() if not maps_ports(info["kind"])]
    wrongly = sum(1 for info in others if any(e.get("external") for e in info.get("port_mapping") or []))
    if wrongly:
        lines.append(f"- members behind a router without miniupnpd that reported a port mapping: {wrongly}")
    relayed = [(r["cell"], p) for r in results for p in r["pairs"] if p["end"] == "relayed"]
    through_member = [(cell, p) for cell, p in relayed if p.get("relay_member")]
    lines.append(f"- relayed pairs: {len(relayed)}; through a member (relay_member set): {len(through_member)}"
                 + (" (" + ", ".join(f"{cell} {p['pair']} via {p['relay_member']}" for cell, p in through_member)
                    + ")" if through_member and len(through_member) <= 12 else "")
                 + f"; through the huddle relay or TURN: {len(relayed) - len(through_member)}")
    failed = [r["cell"] for r in results if not r["connected"]]
    if failed:
        lines.append(f"- not connected: {', '.join(failed)}")
    missed = [r["cell"] for r in eim_cells if not eim_direct(r)]
    if missed:
        lines.append(f"- EIM cells that did not end direct: {', '.join(missed)}")
    times = [p["direct_s"] for r in results for p in r["pairs"] if p.get("direct_s") is not None]
    if times:
        under = sum(1 for t in times if t < 0.5)
        lines.append(f"- time to direct over all {len(times)} pairs that went direct: median {statistics.median(times):.3f} s, "
                     f"max {max(times):.3f} s, {under} under 0.5 s")
    return "\n".join(lines)


def build_sampler(stop, samples):
    """Samples the load average and whether a Swift build runs, every 5 s (from /proc, read only)."""

    def sample():
        while not stop.is_set():
            building = False
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open(f"/proc/{pid}/comm") as comm:
                        if comm.read().strip() in ("swift-frontend", "swift-build", "swift-driver", "clang", "ld",
                                                   "swift-autolink-extract", "ld.gold", "ld.lld"):
                            building = True
                            break
                except OSError:
                    continue
            with open("/proc/loadavg") as load:
                samples.append((time.time(), float(load.read().split()[0]), building))
            stop.wait(5)

    thread = threading.Thread(target=sample, daemon=True)
    thread.start()
    return thread


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--huddle", default=".build/release/huddle")
    parser.add_argument("--cells", default="",
                        help="substring filter on cell names; several separated by commas: the cells matching any")
    parser.add_argument("--sizes", default="2,4")
    parser.add_argument("--timeout", type=float, default=40.0, help="seconds per cell, from the host's start")
    parser.add_argument("--json-out")
    parser.add_argument("--run-dir", default=None, help="logs (default /tmp/natlab/runs/TIMESTAMP)")
    parser.add_argument("--identity-dir", default="/tmp/natlab/ids")
    parser.add_argument("--keep-logs", action="store_true")
    parser.add_argument("--no-default-routes", action="store_true",
                        help="no default routes on the public side (as NATTraversalTests): coturn then fails to send "
                             "to unroutable peers")
    parser.add_argument("--joiners-get-turn", action="store_true",
                        help="diagnosis: joiners get both --turn options too (by default they have only the ticket)")
    parser.add_argument("--coturn-arg", action="append", default=[],
                        help="diagnosis: one more turnserver option (repeatable), e.g. --denied-peer-ip=...")
    parser.add_argument("--coturn-verbose", action="store_true", help="coturn logs every session (--verbose)")
    parser.add_argument("--huddle-arg", action="append", default=[],
                        help="diagnosis: one more option for every member (repeatable), e.g. "
                             "--huddle-arg=--log-level=debug (its log goes to NAME.err)")
    parser.add_argument("--member-relays-only", action="store_true",
                        help="no huddle relay and no coturn, no --relay/--turn/--share-turn: members are the only "
                             "relays (PROTOCOL 10.3); the host is the first full-cone or +upnp member")
    parser.add_argument("--no-nat-check", action="store_true",
                        help="skip the plain-UDP check of each NAT kind's mapping and filtering")
    options = parser.parse_args()
    try:
        sizes = [int(s) for s in options.sizes.split(",") if s]
    except ValueError:
        parser.error("--sizes takes numbers such as 2,4")
    if any(s not in (2, 4) for s in sizes):
        parser.error("--sizes: 2 and 4 only")
    if options.timeout < 20:
        parser.error("--timeout: at least 20")
    if options.member_relays_only and options.joiners_get_turn:
        parser.error("--member-relays-only runs no TURN server: --joiners-get-turn makes no sense with it")
    options.huddle = os.path.abspath(options.huddle)
    if not os.access(options.huddle, os.X_OK):
        print(f"nat_lab: {options.huddle} is not an executable (make release, or --huddle PATH)", file=sys.stderr)
        return 1
    if os.geteuid() != 0:
        print("nat_lab: needs root (network namespaces)", file=sys.stderr)
        return 1
    for tool in ("ip", "nft", "ss") + (() if options.member_relays_only else ("turnserver",)):
        if shutil.which(tool) is None:
            print(f"nat_lab: {tool} is missing (make deps)", file=sys.stderr)
            return 1
    patterns = options.cells.split(",")
    cells = [c for c in cell_list(sizes) if any(pattern in c["name"] for pattern in patterns)]
    if not cells:
        parser.error(f"no cell matches {options.cells!r}")
    upnp_kinds = [k for k in UPNP_KINDS if any(k in (c["a"], c["b"]) for c in cells)]
    if upnp_kinds and not os.access(MINIUPNPD, os.X_OK):
        cells = [c for c in cells if not (maps_ports(c["a"]) or maps_ports(c["b"]))]
        print(f"nat_lab: {MINIUPNPD} is missing (make deps): the cells of {', '.join(upnp_kinds)} are left out",
              file=sys.stderr)
        upnp_kinds = []
        if not cells:
            return 1
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    run_dir = options.run_dir or f"/tmp/natlab/runs/{stamp}"
    os.makedirs(run_dir, exist_ok=True)
    os.makedirs(options.identity_dir, exist_ok=True)

    def interrupted(number, _frame):
        raise Interrupted(f"signal {number}")

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, interrupted)
    swept = sweep_leftovers()
    if swept:
        print(f"nat_lab: deleted {len(swept)} leftover namespaces ({', '.join(swept[:4])}...)", file=sys.stderr)
    stop = threading.Event()
    samples = []
    build_sampler(stop, samples)
    began = time.monotonic()
    started_at = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    head = run(["git", "-C", repo, "rev-parse", "--short", "HEAD"], check=False).stdout.strip() or "?"
    dirty = len(run(["git", "-C", repo, "status", "--porcelain"], check=False).stdout.splitlines())
    results = []
    checks = []
    status = 0
    try:
        if not options.no_nat_check:
            checks = nat_check(upnp_kinds, ipv6=any(c["a"] == IPV6 for c in cells))
            for row in checks:
                print(f"nat_lab: check {row['kind']:16} mapping: {row['mapping']}; filtering: {row['filtering']}"
                      + (f"; port mapping: {row['port_mapping']}" if row.get("port_mapping") else ""),
                      file=sys.stderr, flush=True)
        for index, cell in enumerate(cells):
            result = run_cell(cell, options, index, run_dir)
            results.append(result)
            print(f"nat_lab: {result['cell']:32} connected={'yes' if result['connected'] else 'no ':3} "
                  f"join={fmt(result['join_s'])} first={fmt(result['first_message_s'])} end={result['path_end']} "
                  f"direct={fmt(result['median_direct_s'])} ({result['cell_s']:.1f} s)"
                  + (f" host={result.get('host')} via-member={result.get('member_relayed_pairs')}"
                     if options.member_relays_only else "")
                  + (f" mapping: {mapping_text(result)}" if maps_ports(result["side_a"])
                     or maps_ports(result["side_b"]) else "")
                  + (f" notes: {'; '.join(result['notes'])}" if result["notes"] else ""), file=sys.stderr, flush=True)
    except Interrupted as reason:
        print(f"nat_lab: interrupted ({reason}); cleaned up", file=sys.stderr)
        status = 130
    finally:
        stop.set()
        sweep_leftovers()
    elapsed = time.monotonic() - began
    shared = any(building for _, _, building in samples)
    loads = [load for _, load, _ in samples]
    print(f"## NAT lab{' (member relays only)' if options.member_relays_only else ''}: {len(results)} cells, "
          f"{elapsed:.0f} s, started {started_at}, commit {head}"
          + (f" ({dirty} files changed in the work tree)" if dirty else "") + f", {options.huddle}\n")
    if checks:
        print("NAT emulation check (plain UDP from 192.168.11.2:7000, no huddle):\n")
        print(nat_check_table(checks))
        print()
    print(table(results))
    print()
    print(summary(results))
    if loads:
        print(f"- load average (1 min) during the run: median {statistics.median(loads):.2f}, max {max(loads):.2f}; "
              f"a Swift build was running during {sum(1 for s in samples if s[2])}/{len(samples)} samples"
              + (" (timings may be inflated)" if shared else ""))
    if options.json_out:
        with open(options.json_out, "w") as out:
            json.dump({"started": started_at, "seconds": round(elapsed, 1), "huddle": options.huddle, "commit": head,
                       "work_tree_changes": dirty, "member_relays_only": options.member_relays_only,
                       "nat_check": checks, "cells": results, "load_samples": samples, "summary": summary(results).splitlines()},
                      out, indent=1, default=str)
    if not options.keep_logs and status == 0 and all(r["connected"] for r in results):
        shutil.rmtree(run_dir, ignore_errors=True)
    else:
        print(f"\nlogs: {run_dir}", file=sys.stderr)
    return status


if __name__ == "__main__":
    sys.exit(main())
