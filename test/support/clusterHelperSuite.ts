import { helper } from "./nodeRed";
import { OwnRedisCluster } from "./redisServer";

/**
 * A suite on a 3-master Redis Cluster of its own and the Node-RED test
 * helper: both started before its tests, its flows unloaded after each, both
 * stopped after it. Returns the cluster (its seeds are known once started).
 */
export function clusterHelperSuite(): OwnRedisCluster {
  const cluster = new OwnRedisCluster();
  before(async function () {
    this.timeout(30_000);
    await cluster.start();
    await helper.startServer();
  });
  after(async () => {
    await helper.stopServer();
    await cluster.stop();
  });
  afterEach(() => helper.unload());
  return cluster;
}
