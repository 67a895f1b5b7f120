import type { Node, NodeDef } from "node-red";
import type { CapService } from "../../core/capService";
import type { RawCapSettings } from "../../core/capSettings";

export interface CapCredentials {
  redisPassword?: string;
  pgPassword?: string;
  hmacSecret?: string;
}

export type CapConfigDef = NodeDef & RawCapSettings;

/** The cap-config node: owns one CapService (store connection, rules) and closes it. */
export interface CapConfigNode extends Node<CapCredentials> {
  service?: CapService;
  /** why the service could not start; every gate on this config reports it per msg */
  problem?: Error;
}
