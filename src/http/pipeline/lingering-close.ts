import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'

/** How long a closing connection keeps reading what its client still sends (Apache's lingering close waits 2 s per read). */
export const LINGER_MS = 2000

/**
 * Never reset a connection with an answer in flight. Node closes a connection whose answer is its
 * last (the client sent `Connection: close`, or the answer did) with `destroySoon()`: FIN after
 * the answer, then the socket is destroyed as soon as the FIN is written, even while the client is
 * still sending a body nobody read. Closing a socket with unread bytes makes the kernel send a
 * reset instead of a FIN, and a client that receives it drops whatever it has not read yet: the
 * tail of the answer (13 of 20 `GET /openapi.json` with a 200 KB body before this). Here the
 * connection is half-closed instead: the FIN follows the answer, what the client still sends is
 * read and dropped, and the socket is released when the client closes its side, or after LINGER_MS.
 */
function lingerOnClose (socket: Socket): void {
  socket.destroySoon = function lingeringClose (this: Socket): void {
    if (this.destroyed) return
    if (this.writable) this.end()
    if (this.readableEnded) {
      // The client has closed its side: nothing more can arrive, so nothing can reset.
      if (this.writableFinished) this.destroy()
      else this.once('finish', () => this.destroy())
      return
    }
    const timer = setTimeout(() => this.destroy(), LINGER_MS)
    timer.unref()
    this.once('close', () => { clearTimeout(timer) })
    // Both sides ended: the socket destroys itself (autoDestroy). The HTTP parser reads and drops the rest.
    this.resume()
  }
}

export const lingeringClosePlugin = fp(async function lingeringClose (app: FastifyInstance) {
  app.server.on('connection', lingerOnClose)
}, { name: 'lingering-close' })
