#!/usr/bin/env bash
# Owns the peer for `npm run bench:relay`: a private, loopback-only stock Postfix relay (adapted from
# ../shared/bench/postfix/setup.sh). Needs root and the Debian `postfix` package.
#   postfix-relay.sh start DIR LISTEN_PORT SINK_PORT   # relays example.test to [127.0.0.1]:SINK_PORT via its queue
#   postfix-relay.sh stop DIR
#   postfix-relay.sh qsize DIR
set -euo pipefail
cmd=$1 PF=$2
case $cmd in
  start)
    PORT=$3 SINK=$4
    mkdir -p "$PF/etc" "$PF/queue" "$PF/data" "$PF/log"
    chown postfix:postfix "$PF/data"
    chmod 755 "$PF" "$PF/etc" "$PF/log"
    cat > "$PF/etc/main.cf" <<CF
compatibility_level = 3.6
queue_directory = $PF/queue
data_directory = $PF/data
mail_owner = postfix
setgid_group = postdrop
myhostname = bench-postfix.localdomain
mydomain = localdomain
myorigin = \$myhostname
mydestination =
inet_interfaces = 127.0.0.1
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
relay_domains = example.test
transport_maps = inline:{ example.test=relay:[127.0.0.1]:$SINK }
smtpd_relay_restrictions = permit_mynetworks, defer_unauth_destination
smtp_dns_support_level = disabled
local_transport = error:local delivery disabled
alias_maps =
alias_database =
biff = no
maillog_file = $PF/log/postfix.log
maillog_file_prefixes = $PF/log
CF
    # Debian's stock master.cf with smtpd on PORT and no chroot; everything else stock (a fair peer).
    awk -v port="$PORT" '
      /^#/ || /^[ \t]/ || NF < 8 { print; next }
      {
        if ($1 == "smtp" && $2 == "inet") $1 = "127.0.0.1:" port
        if ($5 == "y" || $5 == "-") $5 = "n"
        line = sprintf("%-10s %-5s %-7s %-7s %-7s %-7s %-7s", $1, $2, $3, $4, $5, $6, $7)
        for (i = 8; i <= NF; i++) line = line " " $i
        print line
      }' /etc/postfix/master.cf > "$PF/etc/master.cf"
    for f in dynamicmaps.cf postfix-files; do [ -e "$PF/etc/$f" ] || cp -p /etc/postfix/$f "$PF/etc/$f"; done
    [ -d /etc/postfix/dynamicmaps.cf.d ] && cp -rp /etc/postfix/dynamicmaps.cf.d "$PF/etc/"
    [ -d /etc/postfix/postfix-files.d ] && cp -rp /etc/postfix/postfix-files.d "$PF/etc/"
    postfix -c "$PF/etc" check
    postfix -c "$PF/etc" start 2>&1 | tail -1
    ;;
  stop)
    postfix -c "$PF/etc" stop 2>&1 | tail -1 || true
    ;;
  qsize)
    find "$PF/queue/incoming" "$PF/queue/active" "$PF/queue/deferred" "$PF/queue/maildrop" -type f 2>/dev/null | wc -l
    ;;
  *) echo "usage: $0 start DIR PORT SINK_PORT | stop DIR | qsize DIR" >&2; exit 2 ;;
esac
