import net from 'node:net'

/**
 * A TCP relay that a test can partition: `hold()` stops every byte in both directions (the
 * connections stay open, as behind a dead switch or a dropped route), `heal()` lets them flow
 * again, `cut()` resets every connection.
 */
export class TcpProxy {
  private readonly server: net.Server
  private readonly pairs = new Set<[net.Socket, net.Socket]>()
  private held = false
  private readonly waiting: (() => void)[] = []
  /** Connections whose bytes are lost for good (their route is gone), though they stay open. */
  private readonly dead = new WeakSet<net.Socket>()

  private constructor (private readonly target: { host: string, port: number }) {
    this.server = net.createServer(client => {
      const upstream = net.connect(target.port, target.host)
      const pair: [net.Socket, net.Socket] = [client, upstream]
      this.pairs.add(pair)
      const relay = (from: net.Socket, to: net.Socket) => {
        from.on('data', chunk => {
          if (this.dead.has(from)) return
          if (!this.held) {
            to.write(chunk)
            return
          }
          // Held: nothing reaches the other side until heal(); the reader stops too (backpressure).
          from.pause()
          this.waiting.push(() => {
            to.write(chunk)
            from.resume()
          })
        })
      }
      relay(client, upstream)
      relay(upstream, client)
      const close = () => {
        client.destroy()
        upstream.destroy()
        this.pairs.delete(pair)
      }
      client.on('error', close).on('close', close)
      upstream.on('error', close).on('close', close)
    })
  }

  static async start (target: { host: string, port: number }): Promise<TcpProxy> {
    const proxy = new TcpProxy(target)
    await new Promise<void>(resolve => proxy.server.listen(0, '127.0.0.1', resolve))
    return proxy
  }

  get port (): number {
    return (this.server.address() as net.AddressInfo).port
  }

  /** The URL `url` with its host and port replaced by the proxy's. */
  via (url: string): string {
    const u = new URL(url)
    u.host = `127.0.0.1:${this.port}`
    return u.toString()
  }

  hold (): void {
    this.held = true
  }

  heal (): void {
    this.held = false
    for (const resume of this.waiting.splice(0)) resume()
  }

  /**
   * Ends the partition for new connections only: those open during it stay silent for ever, as
   * when a route comes back but the state of the old flows is lost (no reset ever arrives).
   */
  healForNewConnections (): void {
    for (const [a, b] of this.pairs) {
      this.dead.add(a)
      this.dead.add(b)
    }
    this.waiting.length = 0
    this.held = false
  }

  cut (): void {
    for (const [a, b] of this.pairs) {
      a.destroy()
      b.destroy()
    }
    this.pairs.clear()
  }

  async close (): Promise<void> {
    this.cut()
    await new Promise(resolve => this.server.close(resolve))
  }
}
