// Calibration reference for ASAP7 (flows/calibration.py computes its power by hand).
// A register fed by input din drives an inverter chain; the last inverter fans out to three
// loaded output ports, and an XOR of the chain with a second input e drives a fourth.
// ASAP7 flops only have QN, so, as in a Yosys netlist, the register's name (q) sits on the
// inverter after it.
module memwall_ref (clk, din, e, y0, y1, y2, y3);
  input clk;
  input din;
  input e;
  output y0;
  output y1;
  output y2;
  output y3;
  wire qn;
  wire q;
  wire n1;
  wire n2;
  DFFHQNx1_ASAP7_75t_R r0 (.CLK(clk), .D(din), .QN(qn));
  INVx1_ASAP7_75t_R u0 (.A(qn), .Y(q));
  INVx1_ASAP7_75t_R u1 (.A(q), .Y(n1));
  INVx1_ASAP7_75t_R u2 (.A(n1), .Y(n2));
  INVx1_ASAP7_75t_R u3 (.A(n2), .Y(y0));
  INVx1_ASAP7_75t_R u4 (.A(n2), .Y(y1));
  INVx1_ASAP7_75t_R u5 (.A(n2), .Y(y2));
  XOR2x1_ASAP7_75t_R u6 (.A(n1), .B(e), .Y(y3));
endmodule
