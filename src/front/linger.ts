/**
 * Closing node:net connections so that the peer reads our last bytes: end our side,
 * then destroy the socket if the peer has not closed within TCP_CLOSE_LINGER_MS. And
 * refusing connections over a cap (tcp.ts, http_net.ts) the same way, with a bound on
 * how many refused sockets linger at once (their descriptors are outside every cap).
 */
import type net from 'node:net';
import { REFUSED_LINGERING_MAX, TCP_CLOSE_LINGER_MS } from '../limits';

/** Ends our side (after `last`), then destroys the socket if the peer has not closed within the linger. */
export function endWithLinger(socket: net.Socket, last?: Buffer | string): void {
  if (last === undefined) socket.end(); else socket.end(last);
  const t = setTimeout(() => socket.destroy(), TCP_CLOSE_LINGER_MS);
  t.unref();
  socket.once('close', () => clearTimeout(t));
}

/** Refused connections of one listener. */
export class Refusals {
  lingering = 0;

  /**
   * Writes `answer` and closes. The peer gets the linger to read it, but at most
   * REFUSED_LINGERING_MAX refused sockets linger at once: past that the socket is
   * destroyed as soon as the answer is written, so a connect flood holds no descriptors.
   */
  refuse(socket: net.Socket, answer: Buffer | string): void {
    socket.on('error', () => socket.destroy());
    if (this.lingering >= REFUSED_LINGERING_MAX) {
      socket.end(answer, () => socket.destroy());
      return;
    }
    this.lingering++;
    socket.once('close', () => { this.lingering--; });
    socket.resume(); // discard what the peer sends; reading also lets its close reach us
    endWithLinger(socket, answer);
  }
}
