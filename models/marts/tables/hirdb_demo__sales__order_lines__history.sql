{{ config(materialized='view') }}
{{ cdc_typed_history("hirdb_demo", "SALES", "ORDER_LINES") }}
