/**
 * Every forwarding header docs/decisions.md names, written out (not read from FORWARDING_HEADERS),
 * so that a name dropped from the filter fails the tests that send them.
 */

/** docs/decisions.md, "Forwarding headers" under Headers: Pinboard's three, then the dropped ones. */
export const HEADERS_SECTION = [
  "X-Forwarded-For",
  "X-Forwarded-Host",
  "X-Forwarded-Proto",
  "Forwarded",
  "X-Real-IP",
  "X-Forwarded-Port",
  "X-Forwarded-Prefix",
  "X-Forwarded-Scheme",
  "X-Forwarded-Ssl",
  "X-Forwarded-Server",
  "X-Forwarded-Uri",
  "X-Forwarded",
  "True-Client-IP",
  "X-Client-IP",
  "X-Cluster-Client-IP",
  "Client-IP",
  "CF-Connecting-IP",
  "X-Original-URL",
  "X-Original-Host",
  "X-Rewrite-URL",
];
/** docs/decisions.md, "Forwarding headers: one list, trusted proxies only": issue 40's and its family. */
export const ISSUE_40_SECTION = [
  "Fastly-Client-IP",
  "X-ProxyUser-Ip",
  "X-Envoy-External-Address",
  "Forwarded-For",
  "Front-End-Https",
  "X-Url-Scheme",
  "X-Host",
  "CF-Connecting-IPv6",
  "CF-Pseudo-IPv4",
  "CF-IPCountry",
  "CF-Visitor",
  "X-Original-Forwarded-For",
  "X-Forwarded-Protocol",
  "X-Originating-IP",
  "X-Remote-IP",
  "X-Remote-Addr",
  "X-Original-URI",
];
export const DOCUMENTED_FORWARDING_HEADERS = [...HEADERS_SECTION, ...ISSUE_40_SECTION];
