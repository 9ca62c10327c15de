// Calibration reference for nangate45 (flows/calibration.py computes its power by hand).
// A register fed by input din drives an inverter chain; the last inverter fans out to three
// loaded output ports, and an XOR of the chain with a second input e drives another. The
// flop's QN drives one more port through an inverter, so both of its outputs are loaded.
module memwall_ref (clk, din, e, y0, y1, y2, y3, y4);
  input clk;
  input din;
  input e;
  output y0;
  output y1;
  output y2;
  output y3;
  output y4;
  wire q;
  wire qn;
  wire n1;
  wire n2;
  DFF_X1 r0 (.CK(clk), .D(din), .Q(q), .QN(qn));
  INV_X1 u0 (.A(qn), .ZN(y3));
  INV_X1 u1 (.A(q), .ZN(n1));
  INV_X1 u2 (.A(n1), .ZN(n2));
  INV_X1 u3 (.A(n2), .ZN(y0));
  INV_X1 u4 (.A(n2), .ZN(y1));
  INV_X1 u5 (.A(n2), .ZN(y2));
  XOR2_X1 u6 (.A(n1), .B(e), .Z(y4));
endmodule
