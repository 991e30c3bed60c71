#pragma once
// How an agent's state looks and reads in the cluster view: a coloured dot, and the client
// library's reason turned into what to do about it.

#include <QColor>
#include <QIcon>
#include <QString>

#include "color_icons.h"  // dotIcon

// The generated protobuf code has Inventory::slots(), which Qt's `slots` keyword macro would
// eat: hide the macro while core's headers are parsed, whatever was included before.
#pragma push_macro("slots")
#undef slots
#include "ringmaster/client/agent_status.h"
#include "ringmaster/hardware/gpu_faults.h"
#pragma pop_macro("slots")

namespace ringmaster::gui {

// The state directory of an agent installed by installer/install-agent.sh or its package, used in
// the commands the view suggests.
inline constexpr const char* kDefaultAgentStateDir = "/var/lib/ringmaster-agent";

QColor stateColor(client::AgentState state);
// Bar colours of the health columns: `normal` below `warn`, amber from `warn`, red from
// `critical`; grey when the numbers are stale (the agent stopped answering).
inline const QColor kCpuColor{0x42, 0x8b, 0xd9};
inline const QColor kMemoryColor{0x26, 0xa6, 0x9a};
inline const QColor kGpuColor{0x7e, 0xb3, 0x3c};
inline const QColor kTemperatureColor{0xd4, 0x8a, 0x3a};
inline const QColor kPowerColor{0xb0, 0x7c, 0xd6};
inline const QColor kNetworkRxColor{0x42, 0x8b, 0xd9};
inline const QColor kNetworkTxColor{0xe0, 0xb0, 0x4c};
inline const QColor kStaleColor{0x70, 0x70, 0x70};
QColor levelColor(double value, double warn, double critical, const QColor& normal);
// A GPU fault's colour: critical red, warning amber, notice grey (the levelColor hues).
QColor faultColor(hardware::FaultSeverity severity);

// A filled circle of stateColor, for the table's state column.
QIcon stateIcon(client::AgentState state);

// The host to name in instructions: the inventory's hostname, else the endpoint's host.
QString agentHost(const client::AgentStatus& status);

// The exact shell line that authorizes `client_key` on an agent. The key is single-quoted (Z85
// has no quote but many characters a shell expands) and put after `--` when it starts with '-'.
QString authorizeCommand(const QString& client_key,
                         const QString& state_dir = kDefaultAgentStateDir);

// One or two sentences saying what is wrong and what to do, e.g. "gpu01 rejected this app's key:
// on gpu01 run ..."; empty for an online agent.
QString stateAdvice(const client::AgentStatus& status, const QString& client_key);

}  // namespace ringmaster::gui
