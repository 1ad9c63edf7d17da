import type { Resource } from '../http/resources.ts'
import { exportsResource } from './exports/index.ts'
import { ordersResource } from './orders/index.ts'
import { postsResource } from './posts/index.ts'

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
]
