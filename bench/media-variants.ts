/**
 * Image work, measured alone: the first computation of a 12-megapixel JPEG's 1 280-wide WebP
 * (p50/p95 over 20 runs), and the peak RSS while 4 such images are processed at once (uploads:
 * decoded, turned, encoded again without metadata). `tsx bench/media-variants.ts`.
 */
import { processUpload, makeVariant, IMAGE_CONCURRENCY } from '../src/resources/media/image.ts'
import { photo, quantile } from './photo.ts'

const source = await photo(1)
const stored = (await processUpload(source, 'image/jpeg', 50_000_000)).data
const times: number[] = []
for (let i = 0; i < 20; i++) {
  const started = performance.now()
  await makeVariant(stored, 1280, 'webp', 75 + (i % 2))
  times.push(performance.now() - started)
}
console.log(`12 MP JPEG → 1280 WebP: p50 ${quantile(times, 0.5).toFixed(0)} ms, p95 ${quantile(times, 0.95).toFixed(0)} ms (20 runs; ${IMAGE_CONCURRENCY} image(s) at once)`)

const photos = await Promise.all([2, 3, 4, 5].map(async seed => await photo(seed)))
let peak = process.memoryUsage().rss
const timer = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 5)
const started = performance.now()
await Promise.all(photos.map(async p => await processUpload(p, 'image/jpeg', 50_000_000)))
clearInterval(timer)
console.log(`4 uploads of 12 MP JPEGs at once: ${(performance.now() - started).toFixed(0)} ms, peak RSS ${(peak / 1048576).toFixed(0)} MiB`)
