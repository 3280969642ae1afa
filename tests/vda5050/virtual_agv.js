// A third-party virtual VDA 5050 AGV for the vda5050 tests and benchmark: vda-5050-lib's
// AgvController with its VirtualAgvAdapter, which drives along edges and runs pick/drop
// node actions. Nothing here decides how the AGV behaves; this file only starts it.
//
//   node virtual_agv.js '{"broker": "mqtt://127.0.0.1:1883", "serialNumber": "agv7", ...}'
//
// Prints "READY" once connected, then one "STATE <json>" line (the controller's own
// state: lastNodeId, loads, orderId, paused, errors...) on SIGUSR2 and on SIGTERM before
// it stops. SIGKILL it to cut the connection the hard way (the broker then publishes its
// Last Will: connectionState CONNECTIONBROKEN).
"use strict";
const { AgvController, VirtualAgvAdapter } = require("vda-5050-lib");

const opts = JSON.parse(process.argv[2] || "{}");
const agvId = { manufacturer: opts.manufacturer || "teamtree-lab", serialNumber: opts.serialNumber || "agv7" };
const clientOptions = {
  interfaceName: opts.interfaceName || "uagv",
  transport: { brokerUrl: opts.broker || "mqtt://127.0.0.1:1883", heartbeat: opts.keepalive || 2 },
  vdaVersion: opts.vdaVersion || "2.0.0",
};
const controllerOptions = {
  agvAdapterType: VirtualAgvAdapter,
  publishStateInterval: opts.publishStateInterval || 30000,
  publishVisualizationInterval: opts.publishVisualizationInterval || 1000,
};
const adapterOptions = {
  initialPosition: opts.initialPosition || { mapId: "local", x: 0, y: 0, theta: 0, lastNodeId: "0" },
  vehicleSpeed: opts.vehicleSpeed || 2,
  tickRate: opts.tickRate || 5,
  timeLapse: opts.timeLapse || 1,
};
const controller = new AgvController(agvId, clientOptions, controllerOptions, adapterOptions);

function printState() {
  const s = controller.currentState;
  const own = {
    orderId: s.orderId, orderUpdateId: s.orderUpdateId, lastNodeId: s.lastNodeId,
    lastNodeSequenceId: s.lastNodeSequenceId, loads: s.loads || [], paused: s.paused,
    driving: s.driving, nodeStates: s.nodeStates, errors: s.errors, agvPosition: s.agvPosition,
    actionStates: s.actionStates,
  };
  process.stdout.write("STATE " + JSON.stringify(own) + "\n");
}

process.on("SIGUSR2", printState);
process.on("SIGTERM", async () => {
  printState();
  try { await controller.stop(); } finally { process.exit(0); }
});

controller.start().then(() => {
  if (opts.factsheet) {
    controller.updateFactsheet(opts.factsheet);
  }
  process.stdout.write("READY\n");
}).catch(err => {
  process.stderr.write("virtual AGV failed to start: " + err + "\n");
  process.exit(2);
});
