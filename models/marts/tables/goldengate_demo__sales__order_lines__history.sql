{{ config(materialized='view') }}
{{ cdc_typed_history("goldengate_demo", "SALES", "ORDER_LINES") }}
