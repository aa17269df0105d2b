"""Self-contained HTML report of an optimization run: data (``_data``) apart from rendering."""

from coalign.report._chart import front_chart, render_chart
from coalign.report._data import (
    AlignmentRow,
    ConfigExamples,
    CostRow,
    CurvePoint,
    ExampleAnswer,
    FrontPoint,
    Interval,
    ParamView,
    ReportData,
    RouteRow,
    StepRow,
    StepTest,
    alignment_rows,
    build_report_data,
)
from coalign.report._format import interval_text, reset_note
from coalign.report._html import render_html
from coalign.report._lines import SeriesPoint, line_chart
from coalign.report._write import REPORT_NAME, write_report

__all__ = ["REPORT_NAME", "AlignmentRow", "ConfigExamples", "CostRow", "CurvePoint",
           "ExampleAnswer", "FrontPoint", "Interval", "ParamView", "ReportData", "RouteRow",
           "SeriesPoint", "StepRow", "StepTest", "alignment_rows", "build_report_data",
           "front_chart", "interval_text", "line_chart", "render_chart", "render_html",
           "reset_note", "write_report"]
