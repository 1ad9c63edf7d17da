import type { Resource } from './http/resources.ts'
import { exportsResource } from './routes/exports/index.ts'
import { ordersResource } from './resources/orders/index.ts'
import { postsResource } from './routes/posts/index.ts'

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
]
