import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface Received {
  readonly path: string
  /** Path and query. */
  readonly url: string
  readonly headers: IncomingMessage['headers']
  readonly body: string
}

/**
 * A webhook receiver on 127.0.0.1 that records every request. Paths choose the answer:
 * `/ok` 204; `/fail` 500; `/redirect` 302 to `/ok`; `/big` 200 with a 10 MB body (`bigClosedEarly`
 * counts answers the sender cut off before their end); `/slow` 204 after 300 ms; `/held` 204 once
 * `release()` is called (after 300 ms once it was), `/hang` never answers.
 */
export async function receiver (): Promise<{ base: string, got: Received[], bigClosedEarly: () => number, release: () => void, close: () => Promise<void> }> {
  const got: Received[] = []
  let closedEarly = 0
  let held: (() => void)[] | null = []
  const server: Server = createServer((req, res) => {
    const parts: Buffer[] = []
    req.on('data', (c: Buffer) => parts.push(c))
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!
      got.push({ path, url: req.url ?? '/', headers: req.headers, body: Buffer.concat(parts).toString('utf8') })
      if (path === '/hang') return
      if (path === '/redirect') {
        res.writeHead(302, { location: '/ok' }).end()
        return
      }
      if (path === '/big') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': String(10 * 1024 * 1024) })
        const chunk = Buffer.alloc(64 * 1024, 120)
        let sent = 0
        const more = () => {
          while (sent < 10 * 1024 * 1024) {
            sent += chunk.length
            if (!res.write(chunk)) return res.once('drain', more)
          }
          res.end()
        }
        res.on('close', () => { if (!res.writableFinished) closedEarly++ })
        more()
        return
      }
      res.statusCode = path === '/fail' ? 500 : 204
      if (path === '/held' && held !== null) held.push(() => res.end())
      else if (path === '/slow' || path === '/held') setTimeout(() => res.end(), 300)
      else res.end()
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    base: `http://127.0.0.1:${port}`,
    got,
    bigClosedEarly: () => closedEarly,
    release: () => {
      for (const answer of held ?? []) answer()
      held = null
    },
    close: async () => {
      server.closeAllConnections()
      await new Promise(resolve => server.close(resolve))
    },
  }
}
