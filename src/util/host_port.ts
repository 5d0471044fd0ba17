/** `host:port` as logs and peers print it; an IPv6 host goes in brackets (`[::1]:8080`). */
export function formatAddr(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}
